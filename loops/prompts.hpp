// Prompts: each iteration's fresh context. A loop type's system prompt comes
// from a built-in template ("plan", "spec", "phase", "code") or from the file
// named by [loops.TYPE] prompt_template; the first user message is always
// the task, the iteration, progress notes of the iterations before, the
// previous iteration's failure and loopr's notes.
//
// Templates use {{name}} placeholders: task, iteration, max_iterations,
// validation_command, tools (the offered tools' names). Unknown names are
// left as written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace loopr::loops {

struct PromptInputs {
  std::string loop_type;
  std::string task;
  std::int64_t iteration = 1;
  std::int64_t max_iterations = 1;
  std::string validation_command;
  std::vector<std::string> tools;
  std::vector<std::string> progress;  // one line or paragraph per earlier iteration
  std::string feedback;               // the previous iteration's failure
  std::string note;                   // loopr's note (loop health)
};

// The template's text: built-in for a bare name, else the file's contents
// (read fresh, at most 256 KiB; an unreadable file is an Error naming it).
Result<std::string> load_template(const std::string& name_or_path);
std::string render_template(const std::string& text, const PromptInputs& inputs);
std::string first_user_message(const PromptInputs& inputs);

}  // namespace loopr::loops
