// Tables of looprd's metrics.get result (docs/control-protocol.md), shared by
// `looprctl metrics` and `looprctl daemon status`. Malformed shapes are
// errc::protocol; printing happens only once the whole shape was checked.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace loopr::client {

// LANE STATE PID SLOTS IN FLIGHT QUEUED RESTARTS LAST ERROR.
Result<void> print_lanes(const nlohmann::json& metrics, std::ostream& out);
// The [cluster] line ("cluster: connected to ..., 2 workers, ..." or why
// the lanes run here); nothing when looprd has no [cluster].
Result<void> print_cluster(const nlohmann::json& metrics, std::ostream& out);
// WORKER LABELS SLOTS RUNNING SEEN: the workers looprd saw lately, and the
// jobs each runs.
Result<void> print_workers(const nlohmann::json& metrics, std::ostream& out);
// The summary line, then per-tool counts and latency percentiles, then lanes.
Result<void> print_metrics(const nlohmann::json& metrics, std::ostream& out);

}  // namespace loopr::client
