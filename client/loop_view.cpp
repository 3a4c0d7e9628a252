#include "client/loop_view.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>
#include <set>

#include "client/text_format.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

// "a, b, c and 4 more" of a listed sample and its whole count.
std::string path_sample(const json& listed, const json& count) {
  std::string text;
  std::size_t shown = 0;
  if (listed.is_array()) {
    for (const json& path : listed) {
      if (!path.is_string() || shown == 5) continue;
      text += (shown++ == 0 ? "" : ", ") + printable(path.get<std::string>());
    }
  }
  const std::size_t whole = count.is_number_unsigned() ? count.get<std::size_t>() : shown;
  if (whole > shown) text += " and " + std::to_string(whole - shown) + " more";
  return text;
}

constexpr std::size_t kTaskWidth = 50;
constexpr std::size_t kArgumentsWidth = 160;
constexpr std::size_t kResultLineWidth = 160;
constexpr std::size_t kResultLines = 3;
constexpr std::size_t kShowOutputLines = 200;

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// Cuts text that is already printable.
std::string cut_printable(std::string text, std::size_t max) {
  if (code_points(text) <= max) return text;
  const std::size_t keep = max > 3 ? max - 3 : 0;
  return std::string(first_code_points(text, keep)) + "...";
}

// A JSON value on one cut line: strings as their text, others as compact JSON.
std::string one_line(const json& value, std::size_t max) {
  if (value.is_string()) return first_line(value.get_ref<const std::string&>(), max);
  return cut(compact_json(value), max);
}

// Prints `text` (untrusted) line by line, each prefixed with `indent`.
void print_indented(std::string_view text, std::string_view indent, std::ostream& out) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out << indent << printable(text.substr(start, end - start)) << '\n';
    start = end + 1;
  }
}

void print_lines(const std::vector<std::string_view>& lines, std::string_view indent,
                 std::ostream& out) {
  for (const auto line : lines)
    out << indent << printable(line) << '\n';
}

// Prints untrusted multi-line text (a model's words) with newlines kept,
// ending with a newline.
void print_text_block(std::string_view text, std::ostream& out) {
  if (text.empty()) return;
  out << printable_lines(text);
  if (text.back() != '\n') out << '\n';
}

// A budget or usage figure in its unit: *_usd as dollars, wall_clock_s and
// *_ms as durations, integers with separators.
std::string budget_figure(std::string_view key, const json& value) {
  if (value.is_null()) return "-";
  const bool ends_usd = key == "usd" || (key.size() > 4 && key.substr(key.size() - 4) == "_usd");
  if (ends_usd) return format_usd(value);
  if (key.size() > 2 && key.substr(key.size() - 2) == "_s" && value.is_number()) {
    return format_duration_ms(value.get<double>() * 1000);
  }
  if (key.size() > 3 && key.substr(key.size() - 3) == "_ms") return format_duration_ms(value);
  if (value.is_number()) return format_count(value);
  return printable(compact_json(value));
}

// loop.get's "changed": a count, a list of files, or a flag.
std::string changed_cell(const json& changed) {
  if (changed.is_array()) return std::to_string(changed.size()) + " files";
  if (changed.is_boolean()) return changed.get<bool>() ? "yes" : "no";
  if (changed.is_null()) return "-";
  return one_line(changed, 20);
}

std::string validation_cell(const json& validation) {
  if (!validation.is_object()) return "-";
  const json& passed = member(validation, "passed");
  if (!passed.is_boolean()) return "?";
  return passed.get<bool>() ? "pass" : "fail (exit " + cell(validation, "exit_code") + ")";
}

std::string iteration_duration(const json& iteration) {
  const auto started = number_of(member(iteration, "started_at_ms"));
  const auto ended = number_of(member(iteration, "ended_at_ms"));
  if (!started || !ended || *ended < *started) return "-";
  return format_duration_ms(*ended - *started);
}

void print_field(std::ostream& out, std::string_view label, const std::string& value) {
  out << label;
  for (std::size_t i = label.size(); i < 11; ++i)
    out << ' ';
  out << value << '\n';
}

// The used figure for a budget key. `used` is a usage object (cost_usd,
// wall_clock_ms) while limits and left name usd and wall_clock_s.
std::string used_figure(const std::string& key, const json& used) {
  const json& same = member(used, key);
  if (!same.is_null()) return budget_figure(key, same);
  if (key == "usd") return format_usd(member(used, "cost_usd"));
  if (key == "wall_clock_s") return format_duration_ms(member(used, "wall_clock_ms"));
  return "-";
}

}  // namespace

void print_budget(const json& budget, std::string_view label, std::ostream& out) {
  if (!budget.is_object()) return;
  const json& limits = member(budget, "limits");
  const json& used = member(budget, "used");
  const json& left = member(budget, "left");
  std::set<std::string> keys;
  for (const json* part : {&limits, &left}) {
    if (!part->is_object()) continue;
    for (const auto& [key, value] : part->items())
      keys.insert(key);
  }
  if (keys.empty()) {
    const std::string head = printable(label) + ":";
    out << head << std::string(head.size() < 11 ? 11 - head.size() : 1, ' ') << "no limits\n";
    return;
  }
  out << printable(label) << ":\n";
  TextTable table({"  BUDGET", "LIMIT", "USED", "LEFT"});
  for (const std::string& key : keys) {
    table.add_row({"  " + printable(key), budget_figure(key, member(limits, key)),
                   used_figure(key, used), budget_figure(key, member(left, key))});
  }
  table.print(out);
}

namespace {

void print_notes(const json& notes, std::ostream& out) {
  if (!notes.is_array() || notes.empty()) return;
  out << "progress notes:\n";
  for (const json& note : notes) {
    const std::string text = note.is_string() ? note.get<std::string>() : compact_json(note);
    std::size_t start = 0;
    bool first = true;
    do {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      out << (first ? "  - " : "    ")
          << printable(std::string_view(text).substr(start, end - start)) << '\n';
      first = false;
      start = end + 1;
    } while (start < text.size());
  }
}

void print_iterations(const json& iterations, std::ostream& out) {
  if (!iterations.is_array() || iterations.empty()) return;
  out << "iterations:\n";
  TextTable table({"  ITER", "TURNS", "TOOL CALLS", "CHANGED", "COMMIT", "VALIDATION", "DURATION"});
  for (const json& iteration : iterations) {
    if (!iteration.is_object()) continue;
    table.add_row({"  " + cell(iteration, "iteration"), cell(iteration, "model_turns"),
                   cell(iteration, "tool_calls"), changed_cell(member(iteration, "changed")),
                   short_commit(member(iteration, "commit")),
                   member(iteration, "handoff").is_object()
                       ? "handed off (" + cell(member(iteration, "handoff"), "reason") + ")"
                       : validation_cell(member(iteration, "validation")),
                   iteration_duration(iteration)});
  }
  table.print(out);
}

void print_tool_calls(const json& calls, std::ostream& out) {
  if (!calls.is_array()) return;
  for (const json& call : calls) {
    out << "  -> " << cell(call, "name") << ' '
        << one_line(member(call, "arguments"), kArgumentsWidth) << '\n';
  }
}

void print_tool_results(const json& results, std::ostream& out) {
  if (!results.is_array()) return;
  for (const json& result : results) {
    const json& ok = member(result, "ok");
    std::string verdict;
    if (ok.is_boolean() && ok.get<bool>()) {
      verdict = "ok";
    } else {
      verdict = "error";
      const std::string status = string_of(result, "status");
      if (!status.empty()) verdict += " (" + printable(status) + ")";
    }
    const json& interrupted = member(result, "interrupted");
    if (interrupted.is_boolean() && interrupted.get<bool>()) verdict += ", interrupted";
    out << "  <- " << cell(result, "name") << ": " << verdict << '\n';
    const json& content = member(result, "content");
    if (content.is_string()) {
      const std::string& text = content.get_ref<const std::string&>();
      std::size_t start = 0;
      std::size_t shown = 0;
      while (start < text.size() && shown < kResultLines) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        out << "     | " << cut(std::string_view(text).substr(start, end - start), kResultLineWidth)
            << '\n';
        ++shown;
        start = end + 1;
      }
      if (start < text.size()) out << "     | ...\n";
    } else if (!content.is_null()) {
      out << "     | " << cut(compact_json(content), kResultLineWidth) << '\n';
    }
  }
}

}  // namespace

bool is_final_status(std::string_view status) {
  return status == "completed" || status == "failed" || status == "cancelled" ||
         status == "budget_exhausted" || status == "stuck" || status == "rejected" ||
         status == "invalidated" || status == "blocked";
}

const json& member(const json& object, std::string_view key) {
  static const json missing;
  if (!object.is_object()) return missing;
  const auto it = object.find(key);
  return it == object.end() ? missing : *it;
}

std::optional<double> number_of(const json& value) {
  if (!value.is_number()) return std::nullopt;
  const double number = value.get<double>();
  if (!std::isfinite(number)) return std::nullopt;
  return number;
}

std::int64_t integer_of(const json& object, std::string_view key, std::int64_t fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return fallback;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_unsigned()) {
    const auto value = it->get<std::uint64_t>();
    return value > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX
                                                         : static_cast<std::int64_t>(value);
  }
  const double value = it->get<double>();
  if (std::isnan(value)) return fallback;
  // 2^63 is exactly representable; anything at or past it clamps.
  if (value >= 9223372036854775808.0) return INT64_MAX;
  if (value <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<std::int64_t>(value);
}

std::string status_cell(const json& loop) {
  std::string status = cell(loop, "status");
  const json& deleted = member(loop, "deleted");
  if (deleted.is_boolean() && deleted.get<bool>()) status += " (deleted)";
  return status;
}

std::string string_of(const json& object, std::string_view key) {
  const json& value = member(object, key);
  return value.is_string() ? value.get<std::string>() : std::string();
}

std::string loop_status(const json& loop) {
  return string_of(loop, "status");
}

std::string first_line(std::string_view text, std::size_t max) {
  const std::size_t end = text.find('\n');
  std::string line = printable(text.substr(0, end));
  const bool more = end != std::string_view::npos && end + 1 < text.size();
  if (!more) return cut_printable(std::move(line), max);
  const std::size_t keep = max > 3 ? max - 3 : 0;
  return std::string(first_code_points(line, keep)) + "...";
}

std::string cut(std::string_view text, std::size_t max) {
  return cut_printable(printable(text), max);
}

std::vector<std::string_view> last_lines(std::string_view text, std::size_t count) {
  if (!text.empty() && text.back() == '\n') text.remove_suffix(1);
  std::vector<std::string_view> lines;
  if (text.empty() || count == 0) return lines;
  std::size_t end = text.size();
  while (lines.size() < count) {
    const std::size_t newline = end == 0 ? std::string_view::npos : text.rfind('\n', end - 1);
    const std::size_t start = newline == std::string_view::npos ? 0 : newline + 1;
    lines.push_back(text.substr(start, end - start));
    if (newline == std::string_view::npos) break;
    end = newline;
  }
  std::reverse(lines.begin(), lines.end());
  return lines;
}

std::string format_usd(const json& usd) {
  const auto value = number_of(usd);
  if (!value || *value < 0) return "-";
  return "$" + fixed(*value, *value < 1 ? 4 : 2);
}

std::string format_count(const json& count) {
  if (count.is_number_integer()) {
    const bool negative = count.is_number_unsigned() ? false : count.get<std::int64_t>() < 0;
    std::string digits = count.is_number_unsigned() ? std::to_string(count.get<std::uint64_t>())
                                                    : std::to_string(count.get<std::int64_t>());
    if (negative) digits.erase(0, 1);
    std::string grouped;
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
      grouped += digits[i];
    }
    return negative ? "-" + grouped : grouped;
  }
  if (count.is_number()) return printable(compact_json(count));
  return "-";
}

std::string format_token_total(const json& usage) {
  double total = 0;
  bool any = false;
  for (const char* key :
       {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}) {
    const auto value = number_of(member(usage, key));
    if (value && *value >= 0) {
      total += *value;
      any = true;
    }
  }
  if (!any) return "-";
  if (total < 1000) return fixed(total, 0);
  if (total < 999'950) return fixed(total / 1000, 1) + "k";
  return fixed(total / 1'000'000, 1) + "M";
}

std::string format_tokens_by_class(const json& usage) {
  return "input " + format_count(member(usage, "input_tokens")) + ", output " +
         format_count(member(usage, "output_tokens")) + ", cache read " +
         format_count(member(usage, "cache_read_tokens")) + ", cache write " +
         format_count(member(usage, "cache_write_tokens"));
}

std::string format_age(const json& then_ms, std::int64_t now_ms) {
  const auto then = number_of(then_ms);
  if (!then || *then <= 0) return "-";  // 0: never set
  const double age = static_cast<double>(now_ms) - *then;
  if (age < 1000) return "just now";
  return format_duration_ms(age) + " ago";
}

std::string short_commit(const json& commit) {
  if (!commit.is_string()) return "-";
  const std::string& text = commit.get_ref<const std::string&>();
  if (text.empty()) return "-";
  return printable(std::string_view(text).substr(0, 8));
}

std::string shell_word(std::string_view word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) != 0 || std::string_view("_./:=@%+,-").find(c) != std::string_view::npos;
  });
  if (plain) return printable(word);
  std::string quoted = "'";
  for (const char c : word) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return printable(quoted + "'");
}

void print_loop_table(const json& loops, std::int64_t now_ms, std::ostream& out) {
  TextTable table({"ID", "TYPE", "STATUS", "ITER", "TOKENS", "COST", "UPDATED", "TASK"});
  if (loops.is_array()) {
    for (const json& loop : loops) {
      if (!loop.is_object()) continue;
      const json& usage = member(loop, "usage");
      const json& task = member(loop, "task");
      table.add_row(
          {cell(loop, "id"), cell(loop, "type"), status_cell(loop),
           cell(loop, "iteration") + "/" + cell(loop, "max_iterations"), format_token_total(usage),
           format_usd(member(usage, "cost_usd")), format_age(member(loop, "updated_at_ms"), now_ms),
           task.is_string() ? first_line(task.get_ref<const std::string&>(), kTaskWidth) : "-"});
    }
  }
  if (table.rows() == 0) {
    out << "no loops\n";
    return;
  }
  table.print(out);
}

namespace {

// The repository's commands and worktree preparation as resolved when the
// loop was made (its [[repositories]] entry, its trusted .loopr/loopr.toml,
// or the daemon's): only what is set.
void print_repo_settings(const json& settings, std::ostream& out) {
  if (!settings.is_object()) return;
  std::string commands;
  const json& listed = member(settings, "commands");
  for (const char* name : {"build", "test", "lint"}) {
    const std::string command = string_of(listed, name);
    if (!command.empty())
      commands +=
          (commands.empty() ? "" : ", ") + std::string(name) + " `" + first_line(command, 80) + "`";
  }
  if (!commands.empty()) print_field(out, "commands:", commands);
  const json& prep = member(settings, "prep");
  const json& include = member(prep, "include");
  if (include.is_array() && !include.empty()) {
    print_field(out, "include:", path_sample(include, json(include.size())));
  }
  const std::string setup = string_of(prep, "setup");
  if (!setup.empty()) print_field(out, "setup:", first_line(setup, 120));
}

// [validation] protected_paths (issue 27): the patterns, then the latest
// attempts on them — a file tool refused, or a change put back before the
// commit.
void print_protected(const json& shown, std::ostream& out) {
  const json& paths = member(shown, "paths");
  if (!paths.is_array() || paths.empty()) return;
  const json& events = member(shown, "events");
  const auto count = static_cast<std::int64_t>(number_of(member(shown, "event_count")).value_or(0));
  print_field(out, "protected:",
              path_sample(paths, json(paths.size())) + " (" +
                  (count == 0 ? std::string("never touched")
                              : std::to_string(count) + (count == 1 ? " attempt" : " attempts")) +
                  ")");
  if (!events.is_array()) return;
  constexpr std::size_t kShown = 5;
  const std::size_t from = events.size() > kShown ? events.size() - kShown : 0;
  for (std::size_t i = from; i < events.size(); ++i) {
    const json& event = events[i];
    std::string line = "  iteration " + cell(event, "iteration") + ": ";
    if (string_of(event, "action") == "refused") {
      line += cell(event, "tool") + " " + cell(event, "path") + " refused (" +
              cell(event, "pattern") + ")";
    } else {
      line += cell(event, "path") + " " + cell(event, "change") + ", put back";
    }
    out << line << '\n';
  }
}

}  // namespace

void print_loop_details(const json& loop, std::int64_t now_ms, std::ostream& out) {
  out << "loop " << cell(loop, "id") << "  " << status_cell(loop) << '\n';
  const std::string reason = string_of(loop, "status_reason");
  if (!reason.empty()) {
    out << "reason:\n";
    print_indented(reason, "  ", out);
  }
  out << "task:\n";
  const std::string task = string_of(loop, "task");
  print_indented(task.empty() ? "-" : task, "  ", out);
  print_field(out, "type:", cell(loop, "type"));
  print_field(out, "repo:", cell(loop, "repo"));
  print_field(out, "branch:", cell(loop, "branch"));
  print_field(out, "worktree:", cell(loop, "worktree"));
  print_field(out, "base:", cell(loop, "base_commit"));
  if (const json& uncommitted = member(loop, "uncommitted"); uncommitted.is_object()) {
    const json& paths = member(uncommitted, "paths");
    const bool included =
        member(uncommitted, "included").is_boolean() && member(uncommitted, "included").get<bool>();
    print_field(out, included ? "uncommitted:" : "left out:",
                path_sample(paths, json(paths.is_array() ? paths.size() : 0)) +
                    (included ? " (in the base snapshot)"
                              : " (uncommitted; --include-uncommitted takes them)"));
  }
  print_field(out, "provider:", cell(loop, "provider") + " / " + cell(loop, "model"));
  print_field(out, "validate:", cell(loop, "validate"));
  print_repo_settings(member(loop, "repo_settings"), out);
  print_protected(member(loop, "protected"), out);
  if (const json& validating = member(loop, "validating"); validating.is_object()) {
    print_field(out, "validating:",
                "since " + format_age(member(validating, "since_ms"), now_ms) +
                    waiting_text(member(validating, "waiting")));
  }
  print_field(out, "iteration:", cell(loop, "iteration") + " of " + cell(loop, "max_iterations"));
  if (const auto handoffs = number_of(member(loop, "handoffs")); handoffs && *handoffs > 0) {
    print_field(out, "handoffs:",
                cell(loop, "handoffs") + " (iterations that ended with a note for the next one)");
  }
  if (!member(loop, "parent_id").is_null()) print_field(out, "parent:", cell(loop, "parent_id"));
  print_field(out, "created:", format_age(member(loop, "created_at_ms"), now_ms));
  print_field(out, "updated:", format_age(member(loop, "updated_at_ms"), now_ms));

  const json& usage = member(loop, "usage");
  out << "usage:\n";
  out << "  tokens: " << format_tokens_by_class(usage) << '\n';
  out << "  model turns " << format_count(member(usage, "model_turns")) << ", tool calls "
      << format_count(member(usage, "tool_calls")) << ", cost "
      << format_usd(member(usage, "cost_usd")) << ", wall clock "
      << format_duration_ms(member(usage, "wall_clock_ms")) << '\n';
  print_budget(member(loop, "budget"), "budget", out);
  print_iterations(member(loop, "iterations"), out);
  print_notes(member(loop, "notes"), out);

  const json& validation = member(loop, "last_validation");
  if (validation.is_object()) {
    out << "last validation (iteration " << cell(validation, "iteration") << "): ";
    print_validation(validation, 0, out);
    const std::string output = string_of(validation, "output");
    const auto lines = last_lines(output, kShowOutputLines);
    print_lines(lines, "  | ", out);
  }
  const std::string diff = diff_command(loop);
  if (!diff.empty()) out << "diff:      " << diff << '\n';
}

std::string diff_command(const json& loop) {
  const std::string repo = string_of(loop, "repo");
  const std::string base = string_of(loop, "base_commit");
  const std::string branch = string_of(loop, "branch");
  if (repo.empty() || base.empty() || branch.empty()) return "";
  return "git -C " + shell_word(repo) + " diff " + shell_word(base + ".." + branch);
}

void print_loop_summary(const json& loop, std::ostream& out) {
  const std::string id = string_of(loop, "id");
  out << "loop " << cell(loop, "id") << ' ' << cell(loop, "status");
  const std::string reason = string_of(loop, "status_reason");
  if (!reason.empty()) out << ": " << first_line(reason, 200);
  out << '\n';
  out << "iterations: " << cell(loop, "iteration") << " of " << cell(loop, "max_iterations")
      << '\n';
  const json& usage = member(loop, "usage");
  out << "tokens:     " << format_tokens_by_class(usage) << '\n';
  out << "cost:       " << format_usd(member(usage, "cost_usd")) << '\n';
  out << "branch:     " << cell(loop, "branch") << '\n';
  const std::string diff = diff_command(loop);
  out << "the diff:   " << (diff.empty() ? std::string() : diff + "  or  ") << "looprctl loop show "
      << (id.empty() ? "ID" : shell_word(id)) << '\n';
}

std::string waiting_text(const json& waiting) {
  if (!waiting.is_object()) return "";
  std::string text = ", waiting for a " + printable(string_of(waiting, "lane")) + " slot (";
  const auto ahead = number_of(member(waiting, "ahead"));
  text += ahead && *ahead > 0 ? cell(waiting, "ahead") + " ahead, " : "next, ";
  text += cell(waiting, "running") + " of " + cell(waiting, "slots") + " running)";
  return text;
}

void print_uncommitted(const json& paths, const json& included, std::ostream& out) {
  if (!paths.is_array() || paths.empty()) return;
  const std::string sample = path_sample(paths, json(paths.size()));
  if (included.is_boolean() && included.get<bool>()) {
    out << "started from your uncommitted changes too (a snapshot commit): " << sample << '\n';
  } else {
    out << "left out: uncommitted changes of your checkout (" << sample
        << "); the loop starts from the last commit. To take them: --include-uncommitted\n";
  }
}

// What a daemon command (the validation) left in the worktree and what
// loopr did with it (worktree_changes.hpp).
void print_by_products(const json& by_products, std::ostream& out) {
  if (!by_products.is_object()) return;
  if (by_products.contains("error")) {
    out << "  (could not sort out what the validation changed: "
        << first_line(string_of(by_products, "error"), 200) << ")\n";
    return;
  }
  const std::string kept =
      path_sample(member(by_products, "kept_out"), member(by_products, "kept_out_count"));
  if (!kept.empty())
    out << "  kept out of the loop's commits (made by the validation): " << kept << '\n';
  const std::string restored =
      path_sample(member(by_products, "restored"), member(by_products, "restored_count"));
  if (!restored.empty()) {
    out << "  put back as committed (the validation changed them): " << restored << '\n';
  }
}

void print_validation(const json& validation, std::size_t tail, std::ostream& out) {
  print_validation_result(validation, tail, out);
  print_by_products(member(validation, "by_products"), out);
}

void print_validation_result(const json& validation, std::size_t tail, std::ostream& out) {
  const json& passed = member(validation, "passed");
  std::string details = "exit " + cell(validation, "exit_code");
  const json& duration = member(validation, "duration_ms");
  if (!duration.is_null()) details += ", " + format_duration_ms(duration);
  // A worker on another machine ran it ([cluster]); "local" goes unsaid.
  const std::string worker = string_of(validation, "worker");
  if (!worker.empty() && worker != "local") details += ", on worker " + worker;
  if (passed.is_boolean() && passed.get<bool>()) {
    out << "validation passed (" << details << ")\n";
    return;
  }
  out << "validation failed (" << details << ")";
  const std::string output = string_of(validation, "output");
  const auto lines = last_lines(output, tail);
  if (lines.empty()) {
    out << '\n';
    return;
  }
  out << "; the last lines of its output:\n";
  print_lines(lines, "  | ", out);
}

void print_step(const json& step, bool model_text, std::ostream& out) {
  const std::string kind = string_of(step, "kind");
  const json& data = member(step, "data");
  if (kind == "created") {
    const json& spec = member(data, "spec");
    const json& task = member(spec, "task");
    out << "created: " << cell(spec, "type") << " loop"
        << (task.is_string() ? ": " + first_line(task.get_ref<const std::string&>(), 100) : "")
        << '\n';
    print_uncommitted(member(spec, "uncommitted_paths"), member(spec, "include_uncommitted"), out);
  } else if (kind == "iteration_started") {
    out << "== iteration " << cell(step, "iteration") << " ==\n";
  } else if (kind == "model_turn") {
    const json& turn = member(data, "turn");
    if (model_text) print_text_block(string_of(turn, "text"), out);
  } else if (kind == "tool_calls_started") {
    print_tool_calls(member(data, "calls"), out);
  } else if (kind == "tool_results") {
    print_tool_results(member(data, "results"), out);
    const std::string note = string_of(data, "note");
    if (!note.empty()) out << "note: " << printable_lines(note) << '\n';
    const std::string ends = string_of(data, "ends_iteration");
    if (!ends.empty()) out << "(this ends the iteration: " << printable(ends) << ")\n";
  } else if (kind == "note") {
    out << "note: ";
    const std::string text = string_of(data, "text");
    out << printable_lines(text.empty() ? "-" : text) << '\n';
  } else if (kind == "committed") {
    const json& changed = member(data, "changed");
    if (changed.is_boolean() && !changed.get<bool>()) {
      out << "nothing to commit: the iteration changed no file (still at "
          << short_commit(member(data, "commit")) << ")\n";
    } else {
      out << "committed " << short_commit(member(data, "commit"))
          << (changed.is_boolean() ? " (files changed)"
                                   : " (" + changed_cell(changed) + " changed)")
          << '\n';
    }
    const std::string left_out =
        path_sample(member(data, "left_out"), member(data, "left_out_count"));
    if (!left_out.empty())
      out << "  left out (by-products of loopr's own commands): " << left_out << '\n';
  } else if (kind == "handoff") {
    out << "handoff (" << cell(data, "reason") << "): " << first_line(string_of(data, "why"), 200)
        << '\n';
    const std::string note = string_of(data, "note");
    out << "handoff note" << (string_of(data, "by") == "loopr" ? " (loopr's record)" : "") << ":\n"
        << printable_lines(note.empty() ? "-" : note) << '\n';
  } else if (kind == "handed_off") {
    out << "not validated: the iteration handed off; the next one starts from its note\n";
  } else if (kind == "validation_started") {
    out << "validating: " << cell(data, "command");
    if (!member(data, "timeout_s").is_null())
      out << " (time limit " << cell(data, "timeout_s") << " s)";
    out << '\n';
  } else if (kind == "validation") {
    print_validation(data, kValidationTail, out);
  } else if (kind == "status") {
    out << "status: " << cell(data, "status");
    const std::string reason = string_of(data, "reason");
    if (!reason.empty()) out << " (" << first_line(reason, 200) << ')';
    out << '\n';
  } else {
    out << '[' << (kind.empty() ? "?" : printable(kind)) << "] "
        << cut(compact_json(data), kArgumentsWidth) << '\n';
  }
}

}  // namespace loopr::client
