"""S3's streaming SigV4 payloads (aws-chunked) by the tests' own reading of
AWS's docs ("Transferring Payload in Multiple Chunks", "Including Trailing
Headers"), not ward's: the checker secret-server.py uses on what the proxy
sends it, and, run as a script, the client a box uses to upload with a
streaming signature (secret-aws.sh):

    python3 sigv4_stream.py URL MODE FRAMING FILE [CHUNK]

MODE signed | signed-trailer | unsigned-trailer, or signed-bad (a byte
of chunk 2 changed after signing); FRAMING length (a
Content-Length) | chunked (Transfer-Encoding: chunked, in pieces that do
not line up with the aws chunks). Keys from AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY, the proxy from https_proxy, the CA from
SSL_CERT_FILE. Prints the HTTP status and the body's first line.

At import the signer is checked against AWS's published example (its
chunk signatures), so a checker that agrees with ward only because both
are wrong the same way fails here first."""
import base64
import hashlib
import hmac
import os
import sys
import zlib

EMPTY = hashlib.sha256(b"").hexdigest()
KINDS = {
    "signed": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "signed-trailer": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    "unsigned-trailer": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def signing_key(secret, date, region, service):
    k = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def _sign(key, *lines):
    return hmac.new(key, "\n".join(lines).encode(), hashlib.sha256).hexdigest()


def chunk_sig(key, amzdate, scope, prev, data):
    return _sign(key, "AWS4-HMAC-SHA256-PAYLOAD", amzdate, scope, prev, EMPTY, sha(data))


def trailer_sig(key, amzdate, scope, prev, trailers):
    canon = "".join("%s:%s\n" % (n.lower(), v.strip()) for n, v in trailers)
    return _sign(key, "AWS4-HMAC-SHA256-TRAILER", amzdate, scope, prev, sha(canon.encode()))


_AWS = signing_key("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524", "us-east-1", "s3")
_S = ("20130524T000000Z", "20130524/us-east-1/s3/aws4_request")
assert chunk_sig(_AWS, *_S, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", b"a" * 65536) == \
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648", "the chunk signer is not AWS's"


def encode(data, mode, chunk, key, amzdate, scope, seed):
    """data as aws-chunked, its chunks chained from seed (a CRC32 trailer
    where the mode has one)."""
    out, prev = [], seed
    pieces = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    for p in pieces:
        if mode == "unsigned-trailer":
            out.append(b"%x\r\n" % len(p))
        else:
            prev = chunk_sig(key, amzdate, scope, prev, p)
            out.append(b"%x;chunk-signature=%s\r\n" % (len(p), prev.encode()))
        if p:
            out.append(p + b"\r\n")
    if mode == "signed":
        out.append(b"\r\n")
    else:
        tr = [("x-amz-checksum-crc32", base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode())]
        out.append(b"".join(b"%s:%s\r\n" % (n.encode(), v.encode()) for n, v in tr))
        if mode == "signed-trailer":
            out.append(b"x-amz-trailer-signature:%s\r\n" % trailer_sig(key, amzdate, scope, prev, tr).encode())
        out.append(b"\r\n")
    return b"".join(out)


def decode(body, mode, key, amzdate, scope, seed):
    """(data, why): why "" where every signature holds under key."""
    data, prev, i = [], seed, 0
    while True:
        e = body.find(b"\r\n", i)
        if e < 0:
            return b"", "a chunk line without CRLF"
        size, _, ext = body[i:e].partition(b";")
        n = int(size, 16)
        i = e + 2
        if mode != "unsigned-trailer":
            want = chunk_sig(key, amzdate, scope, prev, body[i:i + n])
            if ext != b"chunk-signature=" + want.encode():
                return b"", "chunk %d: its signature does not hold" % len(data)
            prev = want
        if not n:
            break
        data.append(body[i:i + n])
        if body[i + n:i + n + 2] != b"\r\n":
            return b"", "a chunk's data without CRLF"
        i += n + 2
    rest = body[i:].split(b"\r\n")
    if rest[-2:] != [b"", b""]:
        return b"", "the end is not a blank line"
    lines = [ln.decode().split(":", 1) for ln in rest[:-2]]
    data = b"".join(data)
    if mode == "signed":
        return data, "" if not lines else "a trailer where none was declared"
    tr = [(n, v) for n, v in lines if n.lower() != "x-amz-trailer-signature"]
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    if dict(tr).get("x-amz-checksum-crc32") != crc:
        return b"", "the trailer's CRC32 is not the data's"
    if mode == "signed-trailer":
        sig = [v for n, v in lines if n.lower() == "x-amz-trailer-signature"]
        if sig != [trailer_sig(key, amzdate, scope, prev, tr)]:
            return b"", "the trailer's signature does not hold"
    return data, ""


def head_sig(key_id, secret, method, host, path, headers, amzdate, region="us-east-1"):
    date = amzdate[:8]
    names = sorted(h.lower() for h in headers)
    hs = {h.lower(): v for h, v in headers.items()}
    creq = "\n".join([method, path, "", "".join("%s:%s\n" % (h, hs[h].strip()) for h in names), ";".join(names),
                      hs["x-amz-content-sha256"]])
    scope = "%s/%s/s3/aws4_request" % (date, region)
    key = signing_key(secret, date, region, "s3")
    sig = _sign(key, "AWS4-HMAC-SHA256", amzdate, scope, sha(creq.encode()))
    auth = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (key_id, scope, ";".join(names), sig)
    return auth, key, scope, sig


def put(url, mode, framing, path, chunk):
    import http.client
    import ssl
    import time
    from urllib.parse import urlsplit
    u = urlsplit(url)
    bad = mode == "signed-bad"
    mode = "signed" if bad else mode
    data = open(path, "rb").read()
    amzdate = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    headers = {"Host": u.netloc, "x-amz-date": amzdate, "x-amz-content-sha256": KINDS[mode],
               "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data))}
    if mode != "signed":
        headers["x-amz-trailer"] = "x-amz-checksum-crc32"
    # The encoded length is known before the signature (a signature is 64
    # digits whatever it is): sign once with it, then encode.
    probe = encode(data, mode, chunk, b"k", amzdate, "s", "0" * 64)
    if framing == "length":
        headers["Content-Length"] = str(len(probe))
    auth, key, scope, seed = head_sig(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], "PUT",
                                      u.netloc, u.path, headers, amzdate)
    body = encode(data, mode, chunk, key, amzdate, scope, seed)
    assert len(body) == len(probe)
    if bad:	# a byte of chunk 2 changed after it was signed
        k = body.index(b"\r\n", body.index(b";chunk-signature=", 10)) + 2 + 100
        body = body[:k] + bytes([body[k] ^ 1]) + body[k + 1:]
    ctx = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
    if os.environ.get("https_proxy"):
        proxy = urlsplit(os.environ["https_proxy"])
        c = http.client.HTTPSConnection(proxy.hostname, proxy.port, context=ctx, timeout=60)
        c.set_tunnel(u.hostname, u.port)
    else:	# straight to the server (CONNECT_TO: its address), as the host's twin
        c = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=60)
        c.sock = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE")).wrap_socket(
            __import__("socket").create_connection((os.environ.get("CONNECT_TO", u.hostname), u.port)),
            server_hostname=u.hostname)
    c.putrequest("PUT", u.path, skip_host=True, skip_accept_encoding=True)
    for h, v in headers.items():
        c.putheader(h, v)
    c.putheader("Authorization", auth)
    if framing == "chunked":
        c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    if framing == "chunked":
        for i in range(0, len(body), 10007):
            p = body[i:i + 10007]
            c.send(b"%x\r\n%s\r\n" % (len(p), p))
        c.send(b"0\r\n\r\n")
    else:
        c.send(body)
    r = c.getresponse()
    line = (r.read().decode("latin-1").splitlines() or [""])[0]
    print(r.status, r.reason + (": " + line if line else ""))


if __name__ == "__main__":
    put(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]) if len(sys.argv) > 5 else 65536)
