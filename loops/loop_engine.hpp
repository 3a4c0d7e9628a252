// LoopEngine (DESIGN.md §8): creates loops, runs each as a coroutine on the
// io thread, and answers the loop.* control methods
// (docs/control-protocol.md "Loops"). One LoopRun per loop holds its spec
// and progress; the journal and the row live in the store, written before
// anything they describe is acted on, so start() resumes every loop that was
// running when looprd stopped, from its last stored step.
//
// It reaches tools through ToolGateway, models through a provider lookup,
// clients through an event sink, and git through loops/worktrees on a worker
// thread (offload.hpp). Errors are Result<json> with rpc codes 1001 (no such
// loop) and 1002 (the loop's state forbids it) in details.rpc_code.
// Threads: io thread only (git runs on the engine's own worker thread).
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "config/settings.hpp"
#include "llm/provider.hpp"
#include "loops/budget.hpp"
#include "loops/tool_gateway.hpp"
#include "store/store.hpp"

namespace loopr::loops {

class LoopRun;

struct LoopEngineServices {
  asio::io_context& io;
  const config::Settings& settings;
  store::Store& store;
  ToolGateway& tools;
  // The provider named in [providers.NAME]; built on first use (its key is
  // read then). An Error says what to set.
  std::function<Result<llm::Provider*>(const std::string& name)> provider;
  // Publishes an event to subscribed clients.
  std::function<void(std::string_view event, nlohmann::json data)> publish;
  // Whether anyone listens for `event` (chat.chunk is skipped otherwise).
  std::function<bool(std::string_view event)> has_subscribers;
};

class LoopEngine {
 public:
  explicit LoopEngine(LoopEngineServices services);
  ~LoopEngine();

  // Loads every loop from the store and resumes those that were running (or
  // waits at the pause point of those paused). Errors: the store unreadable.
  Result<void> start();
  // looprd is stopping: every run stops where it is, without changing its
  // status, so the next start() resumes it. Returns once all have stopped.
  asio::awaitable<void> stop();

  asio::awaitable<Result<nlohmann::json>> create(const nlohmann::json& params);
  Result<nlohmann::json> list(const nlohmann::json& params) const;
  Result<nlohmann::json> get(const nlohmann::json& params) const;
  Result<nlohmann::json> transcript(const nlohmann::json& params) const;
  Result<nlohmann::json> export_turns(const nlohmann::json& params) const;
  Result<nlohmann::json> pause(const nlohmann::json& params);
  Result<nlohmann::json> resume(const nlohmann::json& params);
  Result<nlohmann::json> cancel(const nlohmann::json& params);
  asio::awaitable<Result<nlohmann::json>> remove(const nlohmann::json& params);

  // Everything all loops have spent (the global budget's "used").
  Spend total_spend() const;
  std::size_t loop_count() const { return runs_.size(); }
  std::size_t running_count() const;

  // For LoopRun.
  const LoopEngineServices& services() const { return services_; }
  asio::thread_pool& git_pool() { return git_pool_; }

 private:
  Result<std::shared_ptr<LoopRun>> find(const nlohmann::json& params) const;
  void launch(const std::shared_ptr<LoopRun>& run);

  LoopEngineServices services_;
  asio::thread_pool git_pool_{1};
  std::map<std::string, std::shared_ptr<LoopRun>> runs_;  // by id
  std::int64_t next_seq_ = 1;
  std::size_t active_ = 0;  // run coroutines not yet finished
  bool stopping_ = false;
};

}  // namespace loopr::loops
