// Terminal rendering of looprd's loops (docs/control-protocol.md, "Loops"):
// the <loop> object, loop.get's iterations and budget, and the journal's
// <step>s. Pure functions over JSON: every shape is accepted (a missing or
// mistyped field renders as "-" or is left out), and every string the daemon
// sent goes through printable()/printable_lines() first, so a task, a model's
// text or a tool's output cannot drive the terminal. Thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loopr::client {

// completed, failed, cancelled, budget_exhausted, stuck, and with plans
// rejected, invalidated, blocked: the loop will not run again. queued,
// running, paused, awaiting_approval, waiting and anything unknown are not
// final.
bool is_final_status(std::string_view status);

// loop["status"] when it is a string, else "" (for decisions, not display).
std::string loop_status(const nlohmann::json& loop);
// object[key], or a null value when it is absent or `object` is no object.
const nlohmann::json& member(const nlohmann::json& object, std::string_view key);
// object[key] when it is a string, else "".
std::string string_of(const nlohmann::json& object, std::string_view key);
// `value` when it is a finite number.
std::optional<double> number_of(const nlohmann::json& value);
// object[key] as a whole number, clamped to int64 (a daemon's 1e300 cannot
// overflow a cast); `fallback` when it is not a number.
std::int64_t integer_of(const nlohmann::json& object, std::string_view key,
                        std::int64_t fallback = 0);
// The loop's status for display, " (deleted)" added for a deleted loop.
std::string status_cell(const nlohmann::json& loop);

// The first line of `text`, printable, cut to `max` code points with "...";
// "..." is also added when more lines follow.
std::string first_line(std::string_view text, std::size_t max);
// printable(text) cut to `max` code points with "...".
std::string cut(std::string_view text, std::size_t max);
// The last `count` lines of `text` (a trailing newline ends the last line).
std::vector<std::string_view> last_lines(std::string_view text, std::size_t count);

// US dollars: "$0.0123" below one dollar, "$12.34" above; "-" when not a
// non-negative number.
std::string format_usd(const nlohmann::json& usd);
// An integer with thousands separators ("1,234,567"); other numbers as
// written; "-" when not a number.
std::string format_count(const nlohmann::json& count);
// All of usage's token counts added up, short: "950", "12.3k", "4.1M"; "-"
// when usage holds none.
std::string format_token_total(const nlohmann::json& usage);
// "input 1,200, output 300, cache read 0, cache write 0".
std::string format_tokens_by_class(const nlohmann::json& usage);
// How long before `now_ms` the time `then_ms` was: "3 min ago"; "-" when
// `then_ms` is not a positive number.
std::string format_age(const nlohmann::json& then_ms, std::int64_t now_ms);
// The first 8 characters of a commit id, printable; "-" when not a string.
std::string short_commit(const nlohmann::json& commit);
// `word` as one shell word: as is when it holds only [A-Za-z0-9_./:=@%+,-],
// else in single quotes. The result is printable.
std::string shell_word(std::string_view word);

// ID TYPE STATUS ITER TOKENS COST UPDATED TASK, one row per loop; "no loops"
// when there are none. Entries that are not objects are skipped.
void print_loop_table(const nlohmann::json& loops, std::int64_t now_ms, std::ostream& out);
// Everything loop.get tells about one loop: status, task, where it works,
// provider, usage, budget, iterations, the last validation.
void print_loop_details(const nlohmann::json& loop, std::int64_t now_ms, std::ostream& out);
// The end of `looprctl loop run`: final status and reason, iterations,
// tokens by class, cost, branch and how to see the diff.
void print_loop_summary(const nlohmann::json& loop, std::ostream& out);
// "git -C REPO diff BASE..BRANCH" for the loop, or "" when it lacks them.
std::string diff_command(const nlohmann::json& loop);

// "LABEL:" then a LIMIT / USED / LEFT row per budgeted key of `budget`
// ({limits, used, left}: loop.get's budget, plan.get's plan_budget), or
// "LABEL: no limits".
void print_budget(const nlohmann::json& budget, std::string_view label, std::ostream& out);

// How many of a failed validation's last output lines the views show.
inline constexpr std::size_t kValidationTail = 15;

// "validation passed (exit 0, 1.2 s)" or "validation failed (exit 1, 3 s)",
// then, for a failure, the output's last `tail` lines indented with "  | ".
void print_validation(const nlohmann::json& validation, std::size_t tail, std::ostream& out);
// The pass/fail line and output tail alone (no by-products).
void print_validation_result(const nlohmann::json& validation, std::size_t tail, std::ostream& out);
// ", waiting for a heavy slot (2 ahead, 1 running)" of a tool.queued event or
// a loop's validating.waiting; "" for null.
std::string waiting_text(const nlohmann::json& waiting);
// The checkout's uncommitted paths a loop left out (or took, with
// include_uncommitted), as the lines `loop run` and `loop show` print.
void print_uncommitted(const nlohmann::json& paths, const nlohmann::json& included,
                       std::ostream& out);

// One journal step for a person. `model_text`: print a model_turn's text
// (false when it was already shown as it streamed). Unknown kinds print as
// "[kind] <compact data>".
void print_step(const nlohmann::json& step, bool model_text, std::ostream& out);

}  // namespace loopr::client
