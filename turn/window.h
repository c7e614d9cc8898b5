/* What ward knows of a model's context window: tokens, by model name.
 * The prices are turn/price.h's; this is the other half of what ward
 * knows of a model. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* A model ward does not know is taken to have this many tokens (and the
 * front end says so once). */
#define WINDOW_DEFAULT 128000

/* The window of model (a prefix of its name matches); false when unknown. */
bool window_for(const char *model, int64_t *ret);
