// Prompts: each iteration's fresh context (issue 24: what the model sees,
// docs/model-context.md). A loop type's system prompt comes from a built-in
// template ("plan", "spec", "phase", "code") or from the file named by
// [loops.TYPE] prompt_template; it says how to work and is the same in every
// iteration of a loop (nothing per iteration in it, so a provider's prompt
// cache keeps it). The first user message carries what changes: the task,
// the repository's instructions and file tree, what earlier iterations
// committed, their progress notes and handoff, the last validation failure,
// loopr's notes, how the iteration is judged and its number.
//
// Templates use {{name}} placeholders: task, validation_command, tools (the
// offered tools' names), tool_guidance (paragraphs for the offered tools:
// checks, memory notes, the oracle), iteration and max_iterations (these two
// change every iteration: a template that uses them defeats prompt caching).
// Unknown names are left as written.
#pragma once

#include <cstddef>
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
  std::string validation_command;  // the loop's own; empty: an artifact loop's check
  std::string validation_words;    // how the iteration is judged, in words
  std::vector<std::string> tools;
  // Of `tools`, the ones that run the loop's checks, by their command trait
  // (config::ToolCommand validate, test, build); empty: none offered.
  struct CheckTools {
    std::string validate;
    std::string test;
    std::string build;
  } checks;
  // Of `tools`, the one that asks a second model (the consults_model
  // trait); empty: none offered.
  std::string advisor;
  // Of `tools`, the ones that search and save the repository's memory notes
  // (the memory trait); empty: none offered.
  struct MemoryTools {
    std::string search;
    std::string save;
  } memory;
  std::vector<std::string> progress;  // one line or paragraph per earlier iteration
  std::string feedback;               // the previous iteration's failure
  std::string note;                   // loopr's note (loop health)
  std::string handoff;                // the last iteration's handoff note
  // The repository (Orientation, read by the engine); empty parts are left out.
  std::string branch;
  std::string base_commit;
  std::string instructions_file;
  std::string instructions;
  bool instructions_cut = false;
  std::string tree;
  std::size_t tree_files = 0;
  std::size_t tree_files_shown = 0;
  std::string diff_stat;
};

// The template's text: built-in for a bare name, else the file's contents
// (read fresh, at most 256 KiB; an unreadable file is an Error naming it).
Result<std::string> load_template(const std::string& name_or_path);
std::string render_template(const std::string& text, const PromptInputs& inputs);
std::string first_user_message(const PromptInputs& inputs);

}  // namespace loopr::loops
