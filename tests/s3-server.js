// A local S3 server for tests/integration/store.sh: @20minutes/s3rver, a
// fork of s3rver whose releases check AWS SigV4 signatures (s3rver 3.7.1,
// the last of the original, takes any signature). Loopback only, one
// bucket (ward-test), one key pair (wardtest / wardtest-secret).
//   node s3-server.js NODE_MODULES DATA_DIR PORT_FILE [CERT KEY]
// With CERT and KEY (PEM files) it serves HTTPS (secret-aws.sh).
// Writes the port it got to PORT_FILE once it listens. It ends by itself
// when the process that started it is gone, or after 10 minutes, so a
// killed test leaves nothing running.
'use strict';
const fs = require('fs');
const path = require('path');

const [modules, dataDir, portFile, certFile, keyFile] = process.argv.slice(2);
const pkg = path.join(modules, '@20minutes', 's3rver');
const S3rver = require(pkg);
const AWSAccount = require(path.join(pkg, 'lib', 'models', 'account'));
AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
AWSAccount.DUMMY_ACCOUNT.createKeyPair('wardtest', 'wardtest-secret');

const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(0);
}, 200);
setTimeout(() => process.exit(0), 600 * 1000);

new S3rver({
  address: '127.0.0.1',
  port: 0,
  silent: true,
  vhostBuckets: false,	// s3.test:PORT is the server, not a bucket
  directory: dataDir,
  configureBuckets: [{ name: 'ward-test', configs: [] }],
  ...(certFile ? { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) } : {}),
})
  .run()
  .then(({ port }) => {
    fs.writeFileSync(portFile + '.tmp', String(port));
    fs.renameSync(portFile + '.tmp', portFile);
  })
  .catch((err) => {
    console.error('s3-server: ' + err.message);
    process.exit(1);
  });
