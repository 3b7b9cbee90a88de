// Turning a RunResult into what people read: a per-team table, a side-by-side
// comparison, JSON (the schema the real-cluster demo writes too) and SVG charts.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "run_result.h"

namespace gpufair::sim {

// The definition printed under every table and stored in the JSON, so a
// figure is never read without knowing what it means.
inline constexpr const char* kGamingAdvantageDefinition =
    "median queue wait of the gaming team's qos=high jobs / median queue wait of every other "
    "team's jobs (waits under 1 s count as 1 s; jobs still pending at the end count with their "
    "wait so far); < 1 means gaming pays off, >= 1 means it gains nothing";

// A JSON string literal of s, quoted and escaped.
std::string json_string(const std::string& s);

void print_table(std::FILE* out, const RunResult& r, const std::string& title);
// One line: how long some team held above kOverEntitlement x its entitlement
// while a team below its own had a fitting job waiting, and who.
void print_over_entitlement(std::FILE* out, const RunResult& r);
void print_comparison(std::FILE* out, const std::vector<RunResult>& runs);

// JSON with one field per line; `wall_seconds` (the only field that differs
// between identical runs) sits alone on its own line.
std::string to_json(const RunResult& r, const std::string& scenario);
// Writes `to_json` to path; throws std::runtime_error with the reason.
void write_text_file(const std::string& path, const std::string& text);

// `dir`/<policy>.svg: GPU-hour share per team over time and queue-wait CDFs.
void write_svg(const std::string& dir, const RunResult& r, const std::string& title);

}  // namespace gpufair::sim
