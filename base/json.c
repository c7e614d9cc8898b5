#include "base/json.h"

const char *json_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int64_t json_int(const cJSON *o, const char *k, int64_t dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : dflt;
}
