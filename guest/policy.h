/* The seccomp filter installed in every tool command before exec. */
#pragma once
int policy_install(void);
