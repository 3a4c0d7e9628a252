#include "loops/prompts.hpp"

#include <fstream>
#include <map>
#include <sstream>

namespace loopr::loops {
namespace {

constexpr const char* kCommon =
    "You work in a git worktree of the user's repository; every path is relative to its root. "
    "Use the tools to look before you change anything: read a file before you edit it. Tool "
    "results are JSON; an error says what went wrong and what to do instead. Work in small, "
    "verifiable steps.\n\n"
    "Each iteration starts from a fresh context: what earlier iterations did is summarized in "
    "the first message. After you end your turn, loopr itself runs the validation command "
    "`{{validation_command}}` in the worktree; the work is done only when it passes. If it "
    "fails, the next iteration starts with its output.\n\n"
    "Iteration {{iteration}} of at most {{max_iterations}}. Tools: {{tools}}.\n\n"
    "If memory_search is among them, notes earlier loops kept about this repository may save "
    "you work: search them before you explore. Keep what a later loop should know (a command "
    "that works, a decision and its reason, a trap) with memory_save; update a note that is "
    "wrong rather than adding another. If oracle is among them, it asks a second model for "
    "advice: use it when you are stuck or unsure of a design, with the files it needs.";

const std::map<std::string, std::string>& builtins() {
  static const std::map<std::string, std::string> templates = {
      {"code", std::string("You are loopr's code agent. Make the change the task asks for, "
                           "completely, and nothing else. ") +
                   kCommon +
                   "\n\nWhen the change is complete and you expect the validation to pass, call "
                   "complete_task with a short summary of what you changed."},
      {"plan", std::string("You are loopr's planning agent. Study the repository and break the "
                           "change the task describes into specs: 1 to 10, each with a unique "
                           "name usable as a branch name, a title, a description, and the "
                           "names of the specs it depends on. ") +
                   kCommon + "\n\nRecord the plan with create_plan."},
      {"spec", std::string("You are loopr's spec agent. Turn the spec in the task into 3 to 7 "
                           "ordered phases, each with a name, title and description. ") +
                   kCommon + "\n\nRecord the spec with create_spec."},
      {"phase", std::string("You are loopr's phase agent. Turn the phase in the task into "
                            "concrete tasks (create, modify or delete a file) and a shell "
                            "command that validates them. ") +
                    kCommon + "\n\nRecord the phase with create_phase."},
  };
  return templates;
}

constexpr std::size_t kMaxTemplateBytes = 256 * 1024;

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
      {"validation_command",
       inputs.validation_command.empty() ? "(none)" : inputs.validation_command},
      {"tools", join(inputs.tools, ", ")},
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
  if (!inputs.progress.empty()) {
    out << "\n# Progress so far\n\n";
    for (const std::string& line : inputs.progress)
      out << "- " << line << "\n";
  }
  if (!inputs.feedback.empty()) {
    out << "\n# The last iteration did not pass\n\n" << inputs.feedback << "\n";
  }
  if (!inputs.note.empty()) out << "\n# Note from loopr\n\n" << inputs.note << "\n";
  out << "\nThis is iteration " << inputs.iteration << " of at most " << inputs.max_iterations
      << ".";
  return out.str();
}

}  // namespace loopr::loops
