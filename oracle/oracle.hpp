// Oracle: the `oracle` tool (issue 13). Another agent's question, with
// optional files of its worktree (oracle/attachments.hpp) and context, put
// in one turn to a second model — [oracle] provider (a [providers.NAME] of
// loopr.toml) and model (empty: that provider's) — with no tools, and its
// answer returned with what it cost.
//
// Order of a consultation, each step refusing with an Error a model can act
// on: [oracle] configured (not_configured, naming the keys to set); at most
// [oracle] max_files files (invalid_arguments); the provider made (its key);
// the caller's allowance not already spent (budget_exhausted, before any
// file is read); the files read and cut (the context first takes its share
// of max_total_bytes); max_tokens = [oracle] max_tokens lowered to what the
// allowance leaves once the prompt is paid for (budget_exhausted when
// nothing is left); the model call, which `cancel` stops.
//
// Result: {answer, model, usage: {input_tokens, output_tokens,
// cache_read_tokens, cache_write_tokens}, cost_usd (null: the model has no
// [prices] entry), max_tokens, stop_reason, files: [Attachment::to_json()],
// context_truncated, answer_truncated? (the answer was cut to keep the
// result under max_output_bytes)}. A loop adds usage and cost_usd to its
// spend.
// Threads: io thread only.
#pragma once

#include <asio/awaitable.hpp>
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "budget/budget.hpp"
#include "common/error.hpp"
#include "config/settings.hpp"
#include "llm/cancel_token.hpp"
#include "llm/provider.hpp"
#include "oracle/attachments.hpp"

namespace loopr::oracle {

// [oracle] has no provider.
inline constexpr const char* kNotConfigured = "not_configured";

struct OracleCall {
  nlohmann::json args;  // {question, files?, context?}, checked against the catalog's schema
  // What the calling loop's budgets leave for this call; none: a client's
  // own call, which no budget limits.
  std::optional<Allowance> allowance;
  std::string conversation;               // the tool call's id (a scripted provider keys on it)
  std::size_t max_output_bytes = 100000;  // the answer is cut to keep the result under it
  llm::CancelToken* cancel = nullptr;
};

class Oracle {
 public:
  using ProviderLookup = std::function<Result<llm::Provider*>(const std::string& name)>;

  // `settings` must outlive the Oracle; providers are looked up per call.
  Oracle(const config::Settings& settings, ProviderLookup providers)
      : settings_(settings), providers_(std::move(providers)) {}

  asio::awaitable<Result<nlohmann::json>> consult(OracleCall call, const FileReader& read) const;

  // The system prompt the oracle model is given.
  static const std::string& system_prompt();

 private:
  const config::Settings& settings_;
  ProviderLookup providers_;
};

}  // namespace loopr::oracle
