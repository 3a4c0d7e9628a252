#include "cluster/cluster_link.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "loops/offload.hpp"

namespace loopr::cluster {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string random_id(std::string_view prefix) {
  std::random_device device;
  std::mt19937_64 bits(device());
  std::ostringstream out;
  out << prefix << std::hex << (bits() & 0xffffffffffffULL);
  return out.str();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string relative_cwd(const std::string& worktree, const std::string& cwd) {
  if (cwd.empty() || cwd == worktree) return "";
  if (cwd.starts_with(worktree + "/")) return cwd.substr(worktree.size() + 1);
  return "";
}

}  // namespace

struct ClusterLink::Pending {
  explicit Pending(asio::io_context& io) : timer(io, Clock::time_point::max()) {}
  std::string job_id;
  asio::steady_timer timer;
  bool woken = false;
  bool started = false;
  bool cancelled = false;
  Clock::time_point started_at;  // of the latest delivery
  std::optional<Clock::time_point> first_started_at;
  std::string worker;
  std::uint64_t delivery = 0;
  std::optional<ClusterResult> result;
  std::string nonce;
  std::set<std::string> starters;  // workers that said "started"
  std::uint64_t max_output_bytes = 0;
  std::uint64_t output_bytes = 0;  // streamed so far
  void wake() {
    woken = true;
    timer.cancel();
  }
};

ClusterLink::ClusterLink(asio::io_context& io, config::ClusterSettings settings,
                         std::string state_folder, OutputSink on_output)
    : io_(io),
      settings_(std::move(settings)),
      state_folder_(std::move(state_folder)),
      on_output_(std::move(on_output)),
      daemon_id_(random_id("d")),
      host_id_(host_name()) {}

ClusterLink::~ClusterLink() {
  stop();
  pool_.join();
  bundle_pool_.join();
}

bool ClusterLink::routes(std::string_view lane) const {
  return settings_.configured() &&
         std::find(settings_.lanes.begin(), settings_.lanes.end(), lane) != settings_.lanes.end();
}

void ClusterLink::start() {
  if (!settings_.configured() || connector_.joinable()) return;
  std::error_code ec;
  std::filesystem::create_directories(state_folder_, ec);
  std::filesystem::permissions(state_folder_, std::filesystem::perms::owner_all, ec);
  connector_ = std::thread([this] { connect_loop(); });
}

void ClusterLink::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (connector_.joinable()) connector_.join();
  std::shared_ptr<NatsClient> client;
  {
    std::lock_guard lock(client_mutex_);
    client = std::move(client_);
  }
  // Workers still running looprd's jobs stop them: nobody takes the result.
  for (auto& [id, pending] : pending_) {
    if (client && pending->started) {
      (void)client->publish(daemon_subject("cancel", daemon_id_), json{{"job_id", id}}.dump());
    }
    pending->cancelled = true;
    pending->wake();
  }
  if (client) (void)client->flush(std::chrono::milliseconds(1000));
  *alive_ = false;
  connected_ = false;
}

std::string ClusterLink::unreachable_reason() const {
  std::lock_guard lock(client_mutex_);
  return "NATS at " + settings_.nats_url + " is unreachable" +
         (last_error_.empty() ? std::string() : " (" + last_error_ + ")");
}

void ClusterLink::connect_loop() {
  std::string reported;
  while (true) {
    {
      std::lock_guard lock(stop_mutex_);
      if (stopping_) return;
    }
    NatsSettings nats;
    nats.url = settings_.nats_url;
    nats.creds_file = settings_.creds_file;
    nats.tls_ca_file = settings_.tls_ca_file;
    nats.tls_cert_file = settings_.tls_cert_file;
    nats.tls_key_file = settings_.tls_key_file;
    nats.name = "looprd " + daemon_id_;
    nats.inbox_prefix = std::string(kLooprdInboxPrefix);
    auto client = NatsClient::connect(nats, [this](bool up, const std::string& why) {
      if (up) {
        // Not "connected" before the queue is checked again.
        std::lock_guard lock(stop_mutex_);
        reconnected_ = true;
        stop_cv_.notify_all();
        return;
      }
      {
        std::lock_guard lock(stop_mutex_);
        if (stopping_) return;  // the close stop() asked for
      }
      connected_ = false;
      {
        std::lock_guard lock(client_mutex_);
        last_error_ = why;
      }
      {
        spdlog::warn("cluster: lost NATS at {} ({}); lanes {} run on this machine until it is back",
                     settings_.nats_url, why, fmt::join(settings_.lanes, ", "));
      }
    });
    Result<void> ready = !client ? Result<void>(client.error()) : ensure_queue(**client);
    if (ready) ready = subscribe(**client);
    if (ready) {
      std::shared_ptr<NatsClient> held(std::move(*client));
      {
        std::lock_guard lock(client_mutex_);
        client_ = held;
        last_error_.clear();
      }
      connected_ = true;
      spdlog::info("cluster: connected to NATS at {} as {}; lanes {} go to workers",
                   settings_.nats_url, daemon_id_, fmt::join(settings_.lanes, ", "));
      serve_reconnects(*held);
      return;
    }
    const std::string why =
        ready.error().message + (ready.error().hint.empty() ? "" : "; " + ready.error().hint);
    {
      std::lock_guard lock(client_mutex_);
      last_error_ = ready.error().message;
    }
    if (why != reported) {
      spdlog::warn("cluster: {}; lanes {} run on this machine meanwhile", why,
                   fmt::join(settings_.lanes, ", "));
      reported = why;
    }
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait_for(lock, std::chrono::seconds(2), [this] { return stopping_; });
  }
}

void ClusterLink::serve_reconnects(NatsClient& client) {
  std::unique_lock lock(stop_mutex_);
  while (!stopping_) {
    stop_cv_.wait(lock, [this] { return stopping_ || reconnected_; });
    if (stopping_) return;
    lock.unlock();
    Result<void> ready = ensure_queue(client);
    lock.lock();
    if (ready) {
      reconnected_ = false;
      connected_ = true;
      {
        std::lock_guard client_lock(client_mutex_);
        last_error_.clear();
      }
      spdlog::info("cluster: NATS at {} is back; lanes {} go to workers again", settings_.nats_url,
                   fmt::join(settings_.lanes, ", "));
      continue;
    }
    {
      std::lock_guard client_lock(client_mutex_);
      last_error_ = ready.error().message;
    }
    stop_cv_.wait_for(lock, std::chrono::seconds(2), [this] { return stopping_; });
  }
}

Result<void> ClusterLink::ensure_queue(NatsClient& client) {
  if (auto r = client.ensure_work_queue(settings_.stream, std::string(kSubjectPrefix) + ".jobs.>");
      !r) {
    return r;
  }
  for (const std::string& lane : settings_.lanes) {
    if (auto r =
            client.ensure_consumer(settings_.stream, consumer_name(lane, settings_.require_labels),
                                   jobs_subject(lane, settings_.require_labels),
                                   std::chrono::seconds(settings_.ack_wait_s));
        !r) {
      return r;
    }
  }
  return {};
}

Result<void> ClusterLink::subscribe(NatsClient& client) {
  const auto bind = [this](void (ClusterLink::*method)(NatsMessage)) {
    return [this, method](NatsMessage message) { (this->*method)(std::move(message)); };
  };
  if (auto r =
          client.subscribe(daemon_subject("progress", daemon_id_), bind(&ClusterLink::on_progress));
      !r)
    return r;
  if (auto r =
          client.subscribe(daemon_subject("results", daemon_id_), bind(&ClusterLink::on_result));
      !r)
    return r;
  if (auto r = client.subscribe(daemon_subject("bundles", daemon_id_),
                                bind(&ClusterLink::on_bundle_request));
      !r)
    return r;
  if (auto r = client.subscribe(worker_subject("*"), bind(&ClusterLink::on_presence)); !r) return r;
  return client.flush(std::chrono::milliseconds(2000));
}

asio::awaitable<RemoteReply> ClusterLink::run(proto::Job job, std::string lane, std::string repo) {
  RemoteReply reply;
  const auto local = [&](std::string why) {
    ++fallbacks_;
    reply.run_locally = true;
    reply.why_local = std::move(why);
    return reply;
  };
  const auto cancelled = [&] {
    reply.result.job_id = job.job_id;
    reply.result.status = proto::JobStatus::cancelled;
    reply.link_error = make_error("cancelled", "the call was cancelled");
    return reply;
  };
  std::shared_ptr<NatsClient> client;
  {
    std::lock_guard lock(client_mutex_);
    client = client_;
  }
  if (!client || !connected_) co_return local(unreachable_reason());
  if (pending_.count(job.job_id) != 0) {
    co_return local("a job " + job.job_id + " is already in flight");
  }

  const std::string job_id = job.job_id;
  const std::string worktree = job.worktree;
  const auto began = Clock::now();
  // Known from now on, so a cancel during the snapshot is not lost.
  auto pending = std::make_shared<Pending>(io_);
  pending->job_id = job_id;
  pending->nonce = random_id("");
  pending->max_output_bytes = job.max_output_bytes;
  pending_[job_id] = pending;
  const auto forget_pending = [this, job_id, pending] {
    auto it = pending_.find(job_id);
    if (it != pending_.end() && it->second == pending) pending_.erase(it);
  };

  auto make_snapshot = [&]() {
    return snapshot_worktree(worktree, repo, job_id, host_id_, state_folder_);
  };
  Result<Snapshot> snapshot = co_await loops::offload(pool_, make_snapshot);
  if (pending->cancelled || !*alive_) {
    forget_pending();
    if (snapshot) asio::post(pool_, [held = *snapshot] { (void)drop_snapshot(held); });
    co_return cancelled();
  }
  if (!snapshot) {
    forget_pending();
    co_return local("the worktree cannot be sent to a worker: " + snapshot.error().message);
  }
  {
    std::lock_guard lock(snapshots_mutex_);
    snapshots_[job_id] = HeldSnapshot{*snapshot, 0};
  }
  const Snapshot held = *snapshot;
  const auto forget_snapshot = [this, job_id, held] {
    {
      std::lock_guard lock(snapshots_mutex_);
      snapshots_.erase(job_id);
    }
    asio::post(pool_, [held] {
      if (auto dropped = drop_snapshot(held); !dropped) {
        spdlog::warn("cluster: {}", dropped.error().message);
      }
    });
  };

  ClusterJob queued;
  queued.daemon = daemon_id_;
  queued.lane = lane;
  queued.labels = settings_.require_labels;
  queued.repo_key = snapshot->repo_key;
  queued.repo_name = snapshot->repo_name;
  queued.commit = snapshot->commit;
  queued.cwd = relative_cwd(snapshot->worktree, job.cwd);
  queued.nonce = pending->nonce;
  queued.job = job;
  queued.job.worktree.clear();
  queued.job.cwd.clear();
  queued.job.egress_token.clear();  // a worker has no egress proxy of looprd's

  const std::string subject = jobs_subject(lane, settings_.require_labels);
  const std::string payload = encode(queued);
  const auto queued_at = Clock::now();
  auto publish = [&]() { return client->publish_job(subject, payload); };
  Result<std::uint64_t> sequence = co_await loops::offload(pool_, publish);
  if (!sequence) {
    forget_pending();
    forget_snapshot();
    if (pending->cancelled || !*alive_) co_return cancelled();
    co_return local("queueing the job failed: " + sequence.error().message);
  }

  const auto queue_deadline = queued_at + std::chrono::seconds(settings_.queue_timeout_s);
  const auto run_allowance = std::chrono::milliseconds(job.timeout_ms) +
                             2 * std::chrono::seconds(settings_.ack_wait_s) +
                             std::chrono::seconds(15);
  while (!pending->result && !pending->cancelled && *alive_) {
    const auto deadline = pending->started ? pending->started_at + run_allowance : queue_deadline;
    if (Clock::now() >= deadline) break;
    pending->woken = false;
    pending->timer.expires_at(deadline);
    std::error_code ignored;
    co_await pending->timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  forget_pending();
  forget_snapshot();

  reply.worker = pending->worker;
  reply.deliveries = pending->delivery;
  if (pending->result) {
    ++completed_;
    const auto ms = [](Clock::duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    reply.snapshot_ms = ms(queued_at - began);
    reply.pickup_ms = pending->first_started_at ? ms(*pending->first_started_at - queued_at) : 0;
    reply.overhead_ms = ms(Clock::now() - pending->started_at) -
                        static_cast<double>(pending->result->result.duration_ms);
    reply.prepare_ms = pending->result->prepare_ms;
    reply.result = std::move(pending->result->result);
    reply.result.job_id = job_id;
    reply.worker = pending->result->worker;
    co_return reply;
  }
  // Given up: the job leaves the queue, and a worker still on it stops.
  {
    const std::uint64_t seq = *sequence;
    const std::string stream = settings_.stream;
    const std::string cancel_subject = daemon_subject("cancel", daemon_id_);
    const std::string body = json{{"job_id", job_id}}.dump();
    const bool started = pending->started;
    asio::post(pool_, [client, stream, seq, cancel_subject, body, started] {
      (void)client->delete_message(stream, seq);
      if (started) (void)client->publish(cancel_subject, body);
    });
  }
  if (pending->cancelled || !*alive_) co_return cancelled();
  reply.result.job_id = job_id;
  if (!pending->started) {
    const std::string why = "no worker started the job within [cluster] queue_timeout_s = " +
                            std::to_string(settings_.queue_timeout_s) + " s";
    if (settings_.on_queue_timeout == "local") co_return local(why);
    reply.result.status = proto::JobStatus::error;
    reply.link_error = make_error(errc::timeout, why,
                                  "start a worker (loopr-runner --join) or set [cluster] "
                                  "on_queue_timeout = \"local\"; `looprctl workers` lists them");
    co_return reply;
  }
  reply.result.status = proto::JobStatus::error;
  reply.link_error = make_error(
      errc::timeout,
      "worker " + pending->worker +
          " stopped answering: no result within the job's timeout and two acknowledgement "
          "deadlines",
      "the job may have been lost with its worker; run the call again");
  co_return reply;
}

bool ClusterLink::cancel(const std::string& job_id) {
  auto it = pending_.find(job_id);
  if (it == pending_.end()) return false;
  it->second->cancelled = true;
  it->second->wake();
  return true;
}

bool ClusterLink::admitted(const std::string& worker) const {
  return settings_.admit.empty() ||
         std::find(settings_.admit.begin(), settings_.admit.end(), worker) != settings_.admit.end();
}

void ClusterLink::on_progress(NatsMessage message) {
  auto progress = parse_progress(message.data);
  if (!progress) {
    spdlog::warn("cluster: a progress message refused: {}", progress.error().message);
    return;
  }
  asio::post(io_, [this, alive = alive_, progress = std::move(*progress)]() mutable {
    if (!*alive) return;
    auto it = pending_.find(progress.job_id);
    if (it == pending_.end()) return;
    Pending& pending = *it->second;
    if (!admitted(progress.worker) || progress.nonce != pending.nonce) return;
    if (progress.kind == "started") {
      if (pending.started && pending.worker != progress.worker) {
        spdlog::warn("cluster: job {} redelivered to worker {} (delivery {}) after {} went silent",
                     progress.job_id, progress.worker, progress.delivery, pending.worker);
      }
      pending.started = true;
      pending.started_at = Clock::now();
      pending.worker = progress.worker;
      pending.delivery = progress.delivery;
      pending.starters.insert(progress.worker);
      if (!pending.first_started_at) pending.first_started_at = pending.started_at;
      pending.wake();
    } else if (progress.chunk && on_output_ && progress.worker == pending.worker) {
      // Held to the tool's output cap, as a local runner holds a job's.
      if (pending.output_bytes >= pending.max_output_bytes) return;
      proto::OutputChunk chunk = std::move(*progress.chunk);
      const std::uint64_t room = pending.max_output_bytes - pending.output_bytes;
      if (chunk.data.size() > room) chunk.data.resize(room);
      pending.output_bytes += chunk.data.size();
      chunk.job_id = progress.job_id;
      on_output_(chunk);
    }
  });
}

void ClusterLink::on_result(NatsMessage message) {
  auto result = parse_cluster_result(message.data);
  if (!result) {
    spdlog::warn("cluster: a result refused: {}", result.error().message);
    return;
  }
  asio::post(io_, [this, alive = alive_, result = std::move(*result)]() mutable {
    if (!*alive) return;
    const std::string job_id = result.result.job_id;
    if (!admitted(result.worker)) {
      ++refused_;
      spdlog::warn(
          "cluster: result for job {} from worker {} refused: [cluster] admit does not "
          "list it",
          job_id, result.worker);
      return;
    }
    auto it = pending_.find(job_id);
    if (it == pending_.end() || it->second->result) {
      ++duplicates_;
      spdlog::warn(
          "cluster: result for job {} from worker {} (delivery {}) ignored: the job "
          "already has its result",
          job_id, result.worker, result.delivery);
      return;
    }
    Pending& pending = *it->second;
    // Only a worker that started this job, and saw it (the nonce), answers it.
    if (result.nonce != pending.nonce || pending.starters.count(result.worker) == 0) {
      ++refused_;
      spdlog::warn(
          "cluster: result for job {} from worker {} refused: not from a worker that "
          "started it",
          job_id, result.worker);
      return;
    }
    // Held to the tool's output cap, whatever the worker sent.
    proto::JobResult& held = result.result;
    if (held.output.size() > pending.max_output_bytes) {
      held.output.resize(pending.max_output_bytes);
      held.truncated = true;
    }
    if (held.stderr_bytes.size() > pending.max_output_bytes) {
      held.stderr_bytes.resize(pending.max_output_bytes);
      held.truncated = true;
    }
    pending.result = std::move(result);
    pending.wake();
  });
}

// A reply subject a bundle may go to: a requester's own inbox, never one of
// the subjects looprd may publish on for itself.
static bool is_inbox(const std::string& subject) {
  return subject.starts_with("_INBOX.") && subject.size() < 256 &&
         subject.find_first_of("*> \t\r\n") == std::string::npos;
}

void ClusterLink::on_bundle_request(NatsMessage message) {
  if (!is_inbox(message.reply)) return;
  std::shared_ptr<NatsClient> client;
  {
    std::lock_guard lock(client_mutex_);
    client = client_;
  }
  if (!client) return;
  auto refuse = [&](const std::string& why) {
    BundleChunk chunk;
    chunk.error = why;
    (void)client->publish(message.reply, encode(chunk));
  };
  auto request = parse_bundle_request(message.data);
  if (!request) return refuse(request.error().message);
  if (!admitted(request->worker)) return refuse("[cluster] admit does not list this worker");
  std::optional<Snapshot> snapshot;
  {
    std::lock_guard lock(snapshots_mutex_);
    auto it = snapshots_.find(request->job_id);
    if (it != snapshots_.end() && it->second.snapshot.repo_key == request->repo_key &&
        it->second.snapshot.commit == request->commit && it->second.bundles_sent < kMaxDeliveries) {
      ++it->second.bundles_sent;
      snapshot = it->second.snapshot;
    }
  }
  if (!snapshot) return refuse("no job " + request->job_id + " in flight with that commit");
  asio::post(bundle_pool_, [this, client, snapshot = *snapshot, request = *request,
                            reply = message.reply] {
    auto path = write_bundle(snapshot, request.have, state_folder_);
    if (!path) {
      BundleChunk chunk;
      chunk.error = path.error().message;
      (void)client->publish(reply, encode(chunk));
      return;
    }
    // Read and sent a chunk at a time: a large repository's bundle is never
    // held whole in looprd's memory.
    std::ifstream in(*path, std::ios::binary);
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::uint64_t>(std::max<std::streamoff>(0, in.tellg()));
    in.seekg(0);
    std::uint64_t seq = 0, sent = 0;
    std::string buffer(kBundleChunkBytes, '\0');
    bool ok = true;
    do {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      const auto got = static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount()));
      BundleChunk chunk;
      chunk.seq = seq++;
      chunk.bytes.assign(buffer.data(), got);
      sent += got;
      chunk.last = sent >= size || got == 0;
      if (auto published = client->publish(reply, encode(chunk)); !published) {
        spdlog::warn("cluster: sending a bundle to worker {}: {}", request.worker,
                     published.error().message);
        ok = false;
        break;
      }
      if (chunk.last) break;
      // Let the bytes leave before the next chunk is read.
      (void)client->flush(std::chrono::milliseconds(5000));
    } while (true);
    ::unlink(path->c_str());
    (void)client->flush(std::chrono::milliseconds(5000));
    if (ok) {
      spdlog::info("cluster: sent worker {} a bundle of {} ({} bytes) for job {}", request.worker,
                   snapshot.repo_name, size, request.job_id);
    }
  });
}

void ClusterLink::on_presence(NatsMessage message) {
  auto presence = parse_worker_presence(message.data);
  if (!presence) return;
  asio::post(io_, [this, alive = alive_, presence = std::move(*presence)]() mutable {
    if (!*alive) return;
    if (presence.leaving) {
      workers_.erase(presence.id);
      return;
    }
    const std::string id = presence.id;
    workers_[id] = Seen{std::move(presence), Clock::now()};
  });
}

json ClusterLink::workers_json() const {
  json out = json::array();
  const auto now = Clock::now();
  for (const auto& [id, seen] : workers_) {
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - seen.at);
    if (age > std::chrono::seconds(10)) continue;
    if (!settings_.admit.empty() &&
        std::find(settings_.admit.begin(), settings_.admit.end(), id) == settings_.admit.end()) {
      continue;
    }
    json running = json::array();
    for (const RunningJob& job : seen.presence.running) {
      running.push_back({{"job_id", job.job_id},
                         {"tool", job.tool},
                         {"mine", job.daemon == daemon_id_},
                         {"started_unix_ms", job.started_unix_ms}});
    }
    out.push_back({{"id", id},
                   {"labels", seen.presence.labels},
                   {"lanes", seen.presence.lanes},
                   {"slots", seen.presence.slots},
                   {"running", running},
                   {"seen_ms_ago", age.count()}});
  }
  return out;
}

json ClusterLink::status_json() const {
  json out = {{"configured", settings_.configured()}};
  if (!settings_.configured()) return out;
  std::size_t queued = 0, running = 0;
  for (const auto& [id, pending] : pending_)
    (pending->started ? running : queued) += 1;
  std::string last_error;
  bool have_client = false;
  {
    std::lock_guard lock(client_mutex_);
    last_error = last_error_;
    have_client = client_ != nullptr;
  }
  out["url"] = settings_.nats_url;
  out["daemon_id"] = daemon_id_;
  out["state"] =
      connected_ ? "connected" : (have_client || last_error.empty() ? "connecting" : "unreachable");
  if (!connected_ && !last_error.empty()) out["last_error"] = last_error;
  out["lanes"] = settings_.lanes;
  out["require_labels"] = settings_.require_labels;
  out["queued"] = queued;
  out["in_flight"] = running;
  out["completed"] = completed_;
  out["fallbacks"] = fallbacks_;
  out["duplicates_ignored"] = duplicates_;
  out["refused_results"] = refused_;
  out["workers"] = workers_json();
  return out;
}

}  // namespace loopr::cluster
