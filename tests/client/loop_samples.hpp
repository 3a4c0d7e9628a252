// What the looprctl tests of loops and plans share: <loop> and <step> objects
// as looprd sends them (docs/control-protocol.md, "Loops" and "Plans"), and
// checks on what looprctl printed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/text_checks.hpp"

namespace loopr::test {

inline std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// No raw terminal controls: ESC, other C0 bytes but newline, DEL.
inline bool terminal_safe(const std::string& text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && byte != '\n') || byte == 0x7f) return false;
  }
  return true;
}

// A code loop outside any plan.
inline nlohmann::json a_loop(const std::string& id, const std::string& status) {
  return {{"id", id},
          {"type", "code"},
          {"status", status},
          {"status_reason", ""},
          {"task", "make the tests pass"},
          {"repo", "/src/app"},
          {"base_commit", "9f1c2d3e4f5a"},
          {"branch", "loop/" + id},
          {"worktree", "/src/.loopr-worktrees/" + id},
          {"provider", "anthropic"},
          {"model", "claude-sonnet-4-5"},
          {"parent_id", nullptr},
          {"iteration", 2},
          {"max_iterations", 50},
          {"validate", "make test"},
          {"usage",
           {{"input_tokens", 12000},
            {"output_tokens", 300},
            {"cache_read_tokens", 0},
            {"cache_write_tokens", 0},
            {"model_turns", 4},
            {"tool_calls", 9},
            {"cost_usd", 0.0123},
            {"wall_clock_ms", 95000}}},
          {"last_validation", nullptr},
          {"created_at_ms", 0},
          {"updated_at_ms", 0}};
}

// A loop of plan `plan_id` with its place in the tree: `parent` (empty: the
// plan itself), `children`; created at `created_ms`, updated a minute later.
inline nlohmann::json a_plan_loop(const std::string& id, const std::string& type,
                                  const std::string& status, const std::string& parent,
                                  std::vector<std::string> children = {},
                                  std::int64_t created_ms = 1'700'000'000'000) {
  nlohmann::json loop = a_loop(id, status);
  const std::string plan_id = id.substr(0, id.find('-'));
  loop["type"] = type;
  loop["parent_id"] = parent.empty() ? nlohmann::json() : nlohmann::json(parent);
  loop["plan_id"] = plan_id;
  loop["children"] = std::move(children);
  loop["depends_on"] = nlohmann::json::array();
  loop["queue_reason"] = "";
  loop["merged"] = nullptr;
  loop["artifact_kind"] = type == "code" ? nlohmann::json() : nlohmann::json(type);
  loop["artifact_path"] = nullptr;
  loop["created_at_ms"] = created_ms;
  loop["updated_at_ms"] = created_ms + 60'000;
  return loop;
}

inline nlohmann::json a_step(std::int64_t id, std::int64_t iteration, const std::string& kind,
                             nlohmann::json data) {
  return {{"id", id},
          {"iteration", iteration},
          {"kind", kind},
          {"data", std::move(data)},
          {"at_ms", 0}};
}

inline nlohmann::json model_turn(std::int64_t sequence, const std::string& text,
                                 nlohmann::json calls = nlohmann::json::array()) {
  return {{"sequence", sequence},
          {"turn",
           {{"text", text},
            {"tool_calls", std::move(calls)},
            {"stop_reason", "end_turn"},
            {"model", "m"},
            {"usage", nlohmann::json::object()}}}};
}

}  // namespace loopr::test
