#include "oracle/oracle.hpp"

#include <algorithm>

#include "common/utf8.hpp"

namespace loopr::oracle {
namespace {

using nlohmann::json;

// What a request adds to the prompt's bytes on the wire (roles, keys,
// quoting), for the estimate of its input tokens.
constexpr std::size_t kRequestOverheadBytes = 512;

std::string string_arg(const json& args, const char* key) {
  auto it = args.find(key);
  return it != args.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> files_arg(const json& args) {
  std::vector<std::string> files;
  auto it = args.find("files");
  if (it == args.end() || !it->is_array()) return files;
  for (const json& file : *it)
    if (file.is_string()) files.push_back(file.get<std::string>());
  return files;
}

Error not_configured() {
  return make_error(kNotConfigured,
                    "the oracle is not configured: [oracle] provider is not set in loopr.toml",
                    "ask the user to set [oracle] provider to one of the [providers.NAME] entries "
                    "in loopr.toml (and [oracle] model, or leave it empty for that provider's "
                    "model), then restart looprd; until then, do without the oracle");
}

std::string lines_text(const Attachment& file) {
  if (file.last_line == 0) return "no lines";
  std::string text =
      "lines " + std::to_string(file.first_line) + "-" + std::to_string(file.last_line);
  if (file.total_lines) text += " of " + std::to_string(*file.total_lines);
  return text;
}

// The one user message: the files, then the context, then the question.
std::string user_message(const std::string& question, const std::string& context,
                         std::size_t context_size, const std::vector<Attachment>& files,
                         std::int64_t max_total_bytes) {
  std::string text;
  if (!files.empty()) {
    text += "Attached files from the agent's worktree, as numbered lines (`     N|line`):\n\n";
    for (const Attachment& file : files) {
      text += "--- file: " + file.path + " (" + lines_text(file) +
              (file.truncated ? "; NOT WHOLE: " + file.cut : "") + ") ---\n";
      text += file.text;
      if (!file.text.empty() && file.text.back() != '\n') text += '\n';
      text += "--- end of " + file.path + " ---\n\n";
    }
  }
  if (context_size > 0) {
    text += "Context from the agent:\n" + context + "\n";
    if (context.size() < context_size) {
      text += "[the context was cut here: " + std::to_string(context.size()) + " of " +
              std::to_string(context_size) + " bytes fit [oracle] max_total_bytes (" +
              std::to_string(max_total_bytes) + " bytes)]\n";
    }
    text += "\n";
  }
  text += "Question:\n" + question + "\n";
  return text;
}

}  // namespace

const std::string& Oracle::system_prompt() {
  static const std::string prompt =
      "You are the oracle: a second, independent model that another AI agent consults for "
      "advice while it works on a software repository (through loopr). Answer its question "
      "directly and concisely: the answer first, then only the reasoning it needs. Be "
      "specific: name files, functions and line numbers. You have no tools and see only this "
      "message: the question, the agent's context and the files it attached, as numbered "
      "lines. Where an attachment or the context was cut, a note says so; do not guess what "
      "was cut. If what you were given is not enough to answer, say what is missing.";
  return prompt;
}

asio::awaitable<Result<json>> Oracle::consult(OracleCall call, const FileReader& read) const {
  const config::OracleSettings& o = settings_.oracle;
  if (!o.configured()) co_return not_configured();
  const std::string question = string_arg(call.args, "question");
  const std::string given_context = string_arg(call.args, "context");
  const std::vector<std::string> paths = files_arg(call.args);
  if (static_cast<std::int64_t>(paths.size()) > o.max_files) {
    co_return make_error(errc::invalid_arguments,
                         "oracle: " + std::to_string(paths.size()) +
                             " files attached; [oracle] max_files allows " +
                             std::to_string(o.max_files),
                         "attach the files that matter most, or quote the relevant parts in "
                         "`context`");
  }
  auto provider = providers_(o.provider);
  if (!provider) {
    Error error = std::move(provider).error();
    error.message = "oracle: " + error.message;
    co_return error;
  }
  const std::string model = o.model.empty() ? (*provider)->model() : o.model;
  auto price_it = settings_.prices.find(model);
  const config::ModelPrice* price =
      price_it == settings_.prices.end() ? nullptr : &price_it->second;

  // The context takes its share of max_total_bytes first: the caller wrote
  // it for this question; the files get what is left.
  std::string context = given_context;
  if (static_cast<std::int64_t>(context.size()) > o.max_total_bytes) {
    context.resize(utf8_safe_prefix(context, static_cast<std::size_t>(o.max_total_bytes)));
  }
  const std::size_t fixed_bytes =
      system_prompt().size() + question.size() + context.size() + kRequestOverheadBytes;
  // Nothing is read when the allowance is spent already.
  if (call.allowance) {
    auto fits = max_output_within(*call.allowance, estimate_tokens(fixed_bytes), o.max_tokens,
                                  price, model);
    if (!fits) {
      Error error = std::move(fits).error();
      error.message = "oracle not consulted: " + error.message;
      co_return error;
    }
  }

  AttachmentLimits limits;
  limits.max_file_bytes = o.max_file_bytes;
  limits.max_total_bytes = o.max_total_bytes;
  limits.budget_bytes = o.max_total_bytes - static_cast<std::int64_t>(context.size());
  auto files = co_await read_attachments(paths, limits, read, call.cancel);
  if (!files) co_return std::move(files).error();

  llm::ModelRequest request;
  request.model = o.model;
  request.system = system_prompt();
  request.messages.push_back(
      llm::Message{llm::Role::user,
                   user_message(question, context, given_context.size(), *files, o.max_total_bytes),
                   {},
                   {}});
  request.max_tokens = o.max_tokens;
  request.conversation = call.conversation;
  if (call.allowance) {
    const std::size_t bytes =
        request.system.size() + request.messages.front().text.size() + kRequestOverheadBytes;
    auto capped =
        max_output_within(*call.allowance, estimate_tokens(bytes), o.max_tokens, price, model);
    if (!capped) {
      Error error = std::move(capped).error();
      error.message = "oracle not consulted: " + error.message;
      co_return error;
    }
    request.max_tokens = *capped;
  }
  if (call.cancel != nullptr && call.cancel->cancelled()) {
    co_return make_error(llm::errc::cancelled, "the oracle was cancelled before it was asked");
  }
  llm::TurnCallbacks callbacks;
  callbacks.cancel = call.cancel;
  auto turn = co_await (*provider)->complete(request, callbacks);
  if (!turn) {
    Error error = std::move(turn).error();
    error.message = "oracle (" + o.provider + "): " + error.message;
    // Refused outright (the key, the request, a prompt too long for the
    // window), the model spent nothing; otherwise it may have (a stream cut,
    // a timeout, a cancel mid-answer): the worst case of this call is charged
    // to the caller, as its budgets were checked against it (never overspend).
    if (error.code != llm::errc::provider_auth && error.code != llm::errc::provider_request &&
        error.code != llm::errc::context_overflow) {
      llm::Usage worst;
      worst.input_tokens = estimate_tokens(
          request.system.size() + request.messages.front().text.size() + kRequestOverheadBytes);
      worst.output_tokens = request.max_tokens;
      error.details = {
          {"usage", llm::to_json(worst)},
          {"cost_usd", price != nullptr ? json(cost_usd(worst, *price)) : json()},
          {"charged", "the worst case of this call: the provider may bill an answer it cut off"}};
    }
    co_return error;
  }

  json files_out = json::array();
  for (const Attachment& file : *files)
    files_out.push_back(file.to_json());
  json result = {{"answer", ""},
                 {"model", turn->model.empty() ? model : turn->model},
                 {"usage", llm::to_json(turn->usage)},
                 {"cost_usd", price != nullptr ? json(cost_usd(turn->usage, *price)) : json()},
                 {"max_tokens", request.max_tokens},
                 {"stop_reason", std::string(llm::to_string(turn->stop_reason))},
                 {"files", std::move(files_out)},
                 {"context_truncated", context.size() < given_context.size()}};
  // The answer takes what the rest of the result leaves of the output cap.
  const std::size_t rest = result.dump().size() + 64;
  const std::size_t room = call.max_output_bytes > rest ? call.max_output_bytes - rest : 0;
  std::string answer = std::move(turn->text);
  if (answer.size() > room) {
    answer.resize(utf8_safe_prefix(answer, room));
    result["answer_truncated"] = true;
  }
  result["answer"] = std::move(answer);
  co_return result;
}

}  // namespace loopr::oracle
