/* The price table (turn/price.h): one model of each family pinned as a
 * literal (a change of price is a decision), the family rule (longest
 * name, ending at '-' or the end), and the user's prices over the table. */
#include <math.h>

#include "turn/price.h"
#include "tap.h"

static void pin(const char *model, double in, double out, double read)
{
	struct price p = { 0 };
	bool k = price_for(model, &p);
	ok(k && p.in == in && p.out == out && p.cache_read == read, "%s: $%g in, $%g out, $%g cache read (got %s%g/%g/%g)",
	   model, in, out, read, k ? "" : "none, ", p.in, p.out, p.cache_read);
}

int main(void)
{
	pin("claude-opus-4-5", 5, 25, 0.5);
	pin("claude-opus-4-5-20251101", 5, 25, 0.5);
	pin("claude-opus-4-1-20250805", 15, 75, 1.5);
	pin("claude-opus-4-20250514", 15, 75, 1.5);
	pin("claude-sonnet-4-5-20250929", 3, 15, 0.3);
	pin("claude-sonnet-4-20250514", 3, 15, 0.3);
	pin("claude-haiku-4-5", 1, 5, 0.1);
	pin("claude-3-5-haiku-20241022", 0.8, 4, 0.08);
	pin("gpt-5", 1.25, 10, 0.125);
	pin("gpt-5-2025-08-07", 1.25, 10, 0.125);
	pin("gpt-5-mini", 0.25, 2, 0.025);
	pin("gpt-5-nano", 0.05, 0.4, 0.005);
	pin("o3", 2, 8, 0.5);
	pin("o3-2025-04-16", 2, 8, 0.5);
	pin("o3-mini", 1.1, 4.4, 0.55);
	pin("o4-mini", 1.1, 4.4, 0.275);
	pin("gpt-4o", 2.5, 10, 1.25);
	pin("gpt-4o-mini-2024-07-18", 0.15, 0.6, 0.075);
	pin("gpt-4.1", 2, 8, 0.5);
	pin("gpt-4.1-mini", 0.4, 1.6, 0.1);
	struct price p;
	ok(!price_for("gpt-5.4", &p), "gpt-5.4 is not gpt-5's family: unknown");
	ok(!price_for("o30", &p), "o30 is not o3's");
	ok(price_for("replay:examples/fix-test/replay.json", &p) && p.in == 0, "a replay: script costs nothing");
	ok(!price_for("my-local-model", &p), "a model ward does not know: no prices");
	struct usage u = { .input = 1000000, .output = 1000000, .cache_read = 1000000 };
	price_for("claude-opus-4-5", &p);
	is_int((long long)round(price_cost(&p, &u) * 100), 3050, "claude-opus-4-5: 1M in, out and read cost $30.50");
	struct price mine = { 1, 2, 0.5, 1.25, 2 };
	is_int(price_add("my-local-model", &mine), 0, "the user's prices for a model ward does not know");
	pin("my-local-model", 1, 2, 0.5);
	pin("my-local-model-v2", 1, 2, 0.5);
	struct price cheap = { 0.1, 0.1, 0.1, 0.1, 0.1 };
	price_add("gpt-5", &cheap);
	pin("gpt-5", 0.1, 0.1, 0.1);
	return tap_done();
}
