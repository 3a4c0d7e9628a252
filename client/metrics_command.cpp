// looprctl metrics, and looprctl workers (the cluster part of the same).
#include "client/commands.hpp"
#include "client/metrics_view.hpp"

namespace loopr::client {

int run_metrics(const CommandContext& context) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("metrics.get");
  if (!result) return context.fail(result.error());
  if (context.json) {
    if (!result->is_object()) {
      return context.fail(make_error(errc::protocol, "the metrics.get result is not an object"));
    }
    context.print_json(*result);
    return to_int(ExitStatus::ok);
  }
  if (auto printed = print_metrics(*result, context.out); !printed) {
    return context.fail(printed.error());
  }
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client

namespace loopr::client {

// looprctl workers: metrics.get's cluster part (docs/cluster.md).
int run_workers(const CommandContext& context) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto result = client->call("metrics.get");
  if (!result) return context.fail(result.error());
  if (!result->is_object()) {
    return context.fail(make_error(errc::protocol, "the metrics.get result is not an object"));
  }
  const nlohmann::json cluster = result->value("cluster", nlohmann::json{{"configured", false}});
  if (context.json) {
    context.print_json(cluster);
    return to_int(ExitStatus::ok);
  }
  if (auto printed = print_cluster(*result, context.out); !printed) {
    return context.fail(printed.error());
  }
  if (auto printed = print_workers(*result, context.out); !printed) {
    return context.fail(printed.error());
  }
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
