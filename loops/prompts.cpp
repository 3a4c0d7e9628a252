#include "loops/prompts.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace loopr::loops {
namespace {

// How every loop works, whatever its type. Nothing here changes between
// iterations (see prompts.hpp).
constexpr const char* kCommon =
    "You work in a git worktree of the user's repository, on a branch of your own; every path "
    "is relative to the worktree's top. Tools: {{tools}}.\n\n"
    "How to work:\n"
    "- Look before you change anything: read the files involved (read_file pages long files; "
    "continue at the offset it gives) and search with grep and glob rather than guessing "
    "paths.\n"
    "- Read a file before you edit or overwrite it; prefer edit_file with a small, unique "
    "old_string over rewriting a file. Keep each tool call's arguments small: write a big file "
    "in several edits rather than one huge call.\n"
    "- Tool results are compact text: a command's result starts with its exit code and "
    "duration, then its output as a terminal shows it. A long result is cut in the middle; "
    "the cut marker says how to read the rest with read_output. An error says what went wrong "
    "and what to do instead.\n"
    "- Keep going until the task is done; do not stop to ask the user, who is not watching. "
    "If something blocks you, say what and why in your final answer.\n\n"
    "Iterations: each iteration starts from a fresh context. Its first message tells you the "
    "task, the repository (its instructions for agents, its files), what earlier iterations "
    "committed on this branch and their notes, and the last validation's failure. When your "
    "context fills up, loopr asks you for a handoff note and the next iteration goes on from "
    "it; make the note count.\n\n"
    "The work is judged by {{validation_command}}.{{tool_guidance}}";

const std::map<std::string, std::string>& builtins() {
  static const std::map<std::string, std::string> templates = {
      {"code", std::string("You are loopr's code agent. Make the change the task asks for, "
                           "completely, and nothing else.\n\n") +
                   kCommon +
                   "\n\nWork in this order: reproduce the problem or find where the change "
                   "goes, make the change, run the checks, fix what they report. When the "
                   "change is complete and the checks pass, call complete_task with a short "
                   "summary of what you changed."},
      {"plan", std::string("You are loopr's planning agent. Study the repository and break the "
                           "change the task describes into specs: 1 to 10, each with a unique "
                           "name usable as a branch name, a title, a description, and the "
                           "names of the specs it depends on. You change no file: read, "
                           "search, then record the plan.\n\n") +
                   kCommon + "\n\nRecord the plan with create_plan."},
      {"spec", std::string("You are loopr's spec agent. Turn the spec in the task into 1 to 7 "
                           "ordered phases (as few as the change needs: one for a small change), "
                           "each with a name, title and description.\n\n") +
                   kCommon + "\n\nRecord the spec with create_spec."},
      {"phase", std::string("You are loopr's phase agent. Turn the phase in the task into "
                            "concrete tasks (create, modify or delete a file) and a shell "
                            "command that validates them.\n\n") +
                    kCommon + "\n\nRecord the phase with create_phase."},
  };
  return templates;
}

// Paragraphs for the offered tools only: a paragraph about a tool the model
// does not have would only mislead it.
std::string tool_guidance(const PromptInputs& inputs) {
  std::string out;
  const PromptInputs::CheckTools& checks = inputs.checks;
  if (!checks.validate.empty() || !checks.test.empty() || !checks.build.empty()) {
    out += "\n\nChecks: ";
    if (!checks.validate.empty()) {
      out += checks.validate +
             " runs the loop's own validation command now, so you can see what the "
             "judge will see before you finish. ";
    }
    if (!checks.test.empty()) out += checks.test + " runs the project's test command. ";
    if (!checks.build.empty()) out += checks.build + " runs the project's build command. ";
    out +=
        "Run them after each change that could break something; they run on a shared lane, "
        "so do not run them after every read.";
  }
  if (!inputs.memory.search.empty()) {
    out +=
        "\n\nMemory: notes earlier loops kept about this repository may save you work: "
        "search them (" +
        inputs.memory.search + ") before you explore.";
    if (!inputs.memory.save.empty()) {
      out +=
          " Keep what a later loop should know (a command that works, a decision and its "
          "reason, a trap) with " +
          inputs.memory.save + "; update a note that is wrong rather than adding another.";
    }
  }
  if (!inputs.advisor.empty()) {
    out += "\n\nOracle: the " + inputs.advisor +
           " tool asks a second model for advice: use it when you are stuck or unsure of a "
           "design, with the files it needs.";
  }
  return out;
}

constexpr std::size_t kMaxTemplateBytes = 256 * 1024;

std::string validation_words(const PromptInputs& inputs) {
  if (!inputs.validation_words.empty()) return inputs.validation_words;
  if (inputs.validation_command.empty()) return "(no validation command)";
  return "the validation command `" + inputs.validation_command +
         "`, which loopr runs in the worktree; it must exit 0";
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

}  // namespace

Result<std::string> load_template(const std::string& name_or_path) {
  if (auto it = builtins().find(name_or_path); it != builtins().end()) return it->second;
  if (name_or_path.empty() || name_or_path.front() != '/') {
    return make_error(errc::invalid_arguments, "no built-in prompt template '" + name_or_path + "'",
                      "use plan, spec, phase or code, or the absolute path of a template file");
  }
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) {
    return make_error(errc::not_found, "cannot read the prompt template " + name_or_path,
                      "fix [loops.TYPE] prompt_template in loopr.toml");
  }
  std::string text(kMaxTemplateBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxTemplateBytes) {
    return make_error(errc::too_large, "the prompt template " + name_or_path + " is over 256 KiB");
  }
  return text;
}

std::string render_template(const std::string& text, const PromptInputs& inputs) {
  const std::map<std::string, std::string> values = {
      {"task", inputs.task},
      {"iteration", std::to_string(inputs.iteration)},
      {"max_iterations", std::to_string(inputs.max_iterations)},
      {"validation_command", validation_words(inputs)},
      {"tools", join(inputs.tools, ", ")},
      {"tool_guidance", tool_guidance(inputs)},
  };
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t open = text.find("{{", at);
    if (open == std::string::npos) break;
    const std::size_t close = text.find("}}", open + 2);
    if (close == std::string::npos) break;
    out.append(text, at, open - at);
    auto it = values.find(text.substr(open + 2, close - open - 2));
    if (it != values.end()) {
      out += it->second;
    } else {
      out.append(text, open, close + 2 - open);
    }
    at = close + 2;
  }
  out.append(text, at, std::string::npos);
  return out;
}

std::string first_user_message(const PromptInputs& inputs) {
  std::ostringstream out;
  out << "# Task\n\n" << inputs.task << "\n";
  if (!inputs.instructions.empty()) {
    out << "\n# The repository's instructions (" << inputs.instructions_file << ")\n\n"
        << inputs.instructions;
    if (inputs.instructions.back() != '\n') out << "\n";
    if (inputs.instructions_cut) {
      out << "[cut here; read_file " << inputs.instructions_file << " for the rest]\n";
    }
  }
  if (!inputs.tree.empty()) {
    out << "\n# Files (" << inputs.tree_files << " in the worktree";
    if (inputs.tree_files_shown < inputs.tree_files) {
      out << ", " << inputs.tree_files_shown << " named here; list_directory and glob show the "
          << "rest";
    }
    out << "; .gitignore'd files left out)\n\n" << inputs.tree;
  }
  if (!inputs.diff_stat.empty()) {
    out << "\n# Already done on this branch\n\n"
        << "Earlier iterations' work is committed on " << inputs.branch
        << ": `git diff` shows only what you change now; `git diff "
        << inputs.base_commit.substr(0, 12) << "` shows everything since the loop began.\n\n"
        << inputs.diff_stat;
  }
  if (!inputs.progress.empty()) {
    out << "\n# Progress so far\n\n";
    for (const std::string& line : inputs.progress)
      out << "- " << line << "\n";
  }
  if (!inputs.handoff.empty()) {
    out << "\n# Handoff from the last iteration\n\n" << inputs.handoff << "\n";
  }
  if (!inputs.feedback.empty()) {
    out << "\n# The last iteration did not pass\n\n" << inputs.feedback << "\n";
  }
  if (!inputs.note.empty()) out << "\n# Note from loopr\n\n" << inputs.note << "\n";
  out << "\n# This iteration\n\nIteration " << inputs.iteration << " of at most "
      << inputs.max_iterations << ". When you end your turn, loopr commits the worktree and "
      << "the work is judged by " << validation_words(inputs) << ".";
  return out.str();
}

}  // namespace loopr::loops
