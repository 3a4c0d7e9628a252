// RunHost: what one loop's run (LoopRun, loop_run.hpp) may ask of the engine
// that owns it — the engine's services, its git thread, the provider slots,
// and the few facts about the rest of the tree a run needs (its children, its
// plan's budget and spend). LoopEngine implements it; LoopRun sees only this,
// so the engine uses runs and runs never reach back into the engine.
// Threads: io thread only, like LoopEngine.
#pragma once

#include <asio/io_context.hpp>
#include <asio/thread_pool.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "budget/budget.hpp"
#include "common/error.hpp"
#include "config/settings.hpp"
#include "llm/provider.hpp"
#include "loops/loop_record.hpp"
#include "loops/loop_status.hpp"
#include "loops/scheduler.hpp"
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
  // The daemon's state folder: artifacts are rendered under <state_dir>/loops/<id>/.
  std::string state_dir;
};

class RunHost {
 public:
  virtual const LoopEngineServices& services() const = 0;
  // The one thread git runs on (offload.hpp): git calls of all loops are serial.
  virtual asio::thread_pool& git_pool() = 0;
  virtual ProviderSlots& provider_slots() = 0;
  // What a loop becomes when its own work passed validation: a plan waits
  // for approval, a spec or phase for its children, a code loop completes.
  virtual LoopStatus status_after_own_work(const LoopSpec& spec) const = 0;
  // A run's status changed: the tree may have work (loops/loop_engine_tree.cpp).
  virtual void status_changed(const LoopRun& run) = 0;
  virtual std::vector<std::string> children_ids(const std::string& id) const = 0;
  // A plan's tree budget (null: the plan has none) and its tree's spend.
  virtual const config::BudgetLimits* plan_budget(const std::string& plan_id) const = 0;
  virtual Spend tree_spend(const std::string& plan_id) const = 0;
  // Everything all loops have spent (the global budget's "used").
  virtual Spend total_spend() const = 0;
  // <state_dir>/loops/<id>: where the loop's artifacts are rendered.
  virtual std::string loop_folder(const std::string& id) const = 0;

 protected:
  ~RunHost() = default;
};

}  // namespace loopr::loops
