/* ward report's four forms of a fleet's results (task/report.h): a table
 * for a person, one JSON object, JUnit XML, Markdown. */
#pragma once
#include <stdio.h>

#include "task/report.h"

/* Each writes the whole report to f; a negative errno if writing failed. */
int report_text(const struct report *r, FILE *f);
int report_json(const struct report *r, FILE *f);
int report_junit(const struct report *r, FILE *f);
int report_markdown(const struct report *r, FILE *f);
