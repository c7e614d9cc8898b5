/* Reading a member of a JSON object a stranger may have written: the
 * value when it has the type asked for, else none. */
#pragma once
#include <stdint.h>

#include <cjson/cJSON.h>

/* The string member k of o, or NULL (absent, or not a string). */
const char *json_str(const cJSON *o, const char *k);
/* The number member k of o, or dflt (absent, or not a number). */
int64_t json_int(const cJSON *o, const char *k, int64_t dflt);
