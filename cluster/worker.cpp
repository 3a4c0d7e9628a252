#include "cluster/worker.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "cluster/cluster_messages.hpp"
#include "cluster/nats_client.hpp"
#include "cluster/runner_child.hpp"
#include "cluster/worker_repos.hpp"

namespace loopr::cluster {

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t now_unix_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

void say(const std::string& line) {
  std::cerr << "loopr-runner: worker: " << line << std::endl;
}

struct Consumer {
  std::string lane;
  std::vector<std::string> labels;
  std::unique_ptr<PullConsumer> pull;
  std::chrono::milliseconds ack_wait{30000};
};

class Worker {
 public:
  Worker(const WorkerOptions& options, std::unique_ptr<RunnerChild> runner)
      : options_(options), runner_(std::move(runner)), repos_(options.state) {}

  int run(std::unique_ptr<NatsClient> client) {
    client_ = std::move(client);
    // A cancel names the job; the subject names the looprd that sent it,
    // so one looprd cannot stop another's job.
    const std::string cancel_prefix = std::string(kSubjectPrefix) + ".cancel.";
    (void)client_->subscribe(cancel_prefix + "*", [this, cancel_prefix](NatsMessage m) {
      const auto body = nlohmann::json::parse(m.data, nullptr, false);
      if (!body.is_object() || !body.contains("job_id") || !body["job_id"].is_string()) return;
      if (!m.subject.starts_with(cancel_prefix)) return;
      const std::string key =
          running_key(m.subject.substr(cancel_prefix.size()), body["job_id"].get<std::string>());
      std::lock_guard lock(running_mutex_);
      if (running_.count(key) != 0) runner_->cancel(key);
    });
    std::vector<std::thread> threads;
    threads.emplace_back([this] { presence_loop(); });
    for (unsigned slot = 0; slot < options_.slots; ++slot)
      threads.emplace_back([this, slot] { slot_loop(slot); });
    // SIGTERM / SIGINT (blocked in every thread) end the worker.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    int signal = 0;
    while (!stopping_) {
      timespec wait{0, 200'000'000};
      siginfo_t info;
      signal = ::sigtimedwait(&stop_signals, &info, &wait);
      if (signal > 0) break;
    }
    if (signal > 0) say("stopping: finishing the jobs it holds");
    stopping_ = true;
    for (auto& thread : threads)
      thread.join();
    WorkerPresence leaving = presence();
    leaving.leaving = true;
    (void)client_->publish(worker_subject(options_.id), encode(leaving));
    (void)client_->flush(std::chrono::milliseconds(1000));
    // Closed here, while everything its handlers touch is still alive.
    client_.reset();
    return exit_code_;
  }

 private:
  WorkerPresence presence() {
    WorkerPresence p;
    p.id = options_.id;
    p.labels = options_.labels;
    p.lanes = options_.lanes;
    p.slots = options_.slots;
    p.sent_unix_ms = now_unix_ms();
    std::lock_guard lock(running_mutex_);
    for (const auto& [id, job] : running_)
      p.running.push_back(job);
    return p;
  }

  void presence_loop() {
    while (!stopping_) {
      (void)client_->publish(worker_subject(options_.id), encode(presence()));
      for (int i = 0; i < 20 && !stopping_; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  // This slot's consumers: one per lane and subset of the labels, bound as
  // looprd makes them (a consumer not made yet is tried again later).
  void bind_missing(std::vector<Consumer>& consumers, Clock::time_point& next_try) {
    if (Clock::now() < next_try) return;
    next_try = Clock::now() + std::chrono::seconds(2);
    for (const std::string& lane : options_.lanes) {
      for (const auto& subset : label_subsets(options_.labels)) {
        const std::string durable = consumer_name(lane, subset);
        bool bound = false;
        for (const Consumer& c : consumers)
          bound = bound || (c.lane == lane && c.labels == subset);
        if (bound) continue;
        auto pull = client_->bind_consumer(options_.stream, durable, jobs_subject(lane, subset));
        if (!pull) continue;
        Consumer c{lane, subset, std::move(*pull), std::chrono::milliseconds(30000)};
        if (auto wait = client_->consumer_ack_wait(options_.stream, durable);
            wait && wait->count() > 0) {
          c.ack_wait = *wait;
        } else {
          say("consumer " + durable + ": its acknowledgement deadline is unknown (" +
              (wait ? std::string("0") : wait.error().message) + "); heartbeats every second");
        }
        consumers.push_back(std::move(c));
      }
    }
  }

  void slot_loop(unsigned slot) {
    std::vector<Consumer> consumers;
    auto next_try = Clock::now();
    std::size_t turn = 0;
    while (!stopping_) {
      bind_missing(consumers, next_try);
      if (consumers.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      Consumer& consumer = consumers[turn++ % consumers.size()];
      const auto wait =
          consumers.size() == 1 ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(100);
      auto message = consumer.pull->fetch(wait);
      if (!message) {
        // The consumer may be gone (a restarted server): bind it again.
        say("fetching from " + consumer_name(consumer.lane, consumer.labels) + ": " +
            message.error().message + "; binding again");
        consumers.erase(consumers.begin() +
                        static_cast<std::ptrdiff_t>((turn - 1) % (consumers.size())));
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        continue;
      }
      if (!*message) continue;
      handle(slot, consumer, **message);
    }
  }

  Result<void> fetch_bundle(const ClusterJob& job, const std::vector<std::string>& have,
                            const std::string& path) {
    const std::string inbox = client_->new_inbox();
    auto replies = client_->subscribe_sync(inbox);
    if (!replies) return std::move(replies).error();
    BundleRequest request{job.job.job_id, job.repo_key, job.commit, options_.id, have};
    if (auto sent =
            client_->publish_request(daemon_subject("bundles", job.daemon), inbox, encode(request));
        !sent) {
      return sent;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    std::uint64_t expected = 0;
    for (;;) {
      auto message = (*replies)->next(std::chrono::milliseconds(60000));
      if (!message) return std::move(message).error();
      auto chunk = parse_bundle_chunk(message->data);
      if (!chunk) return std::move(chunk).error();
      if (chunk->error) {
        return make_error(errc::not_found, "looprd sent no bundle: " + *chunk->error);
      }
      if (chunk->seq != expected++) {
        return make_error(errc::protocol, "a bundle chunk came out of order");
      }
      out.write(chunk->bytes.data(), static_cast<std::streamsize>(chunk->bytes.size()));
      if (chunk->last) break;
    }
    out.close();
    if (!out) return make_error(errc::io, "writing the bundle " + path + " failed");
    return {};
  }

  // The key a running job is known by here: looprd's call ids restart at
  // c-1 with each looprd, so the daemon's id is part of it. It is also the
  // job id the worker's own runner sees.
  static std::string running_key(const std::string& daemon, const std::string& job_id) {
    return daemon + "/" + job_id;
  }

  // The result as it can travel: within the server's max_payload, the
  // output and stderr cut (head kept, truncated set) when the whole would
  // not fit. An encoded result always fits once both are cut this far.
  std::string fitted_result(ClusterResult out) const {
    const std::size_t limit = client_->max_payload();
    std::string encoded = encode(out);
    if (encoded.size() <= limit) return encoded;
    // Base64 (binary output) costs 4/3, and JSON escaping may double text.
    const std::size_t room = limit > 16384 ? (limit - 16384) / 4 : 0;
    if (out.result.output.size() > room) out.result.output.resize(room);
    if (out.result.stderr_bytes.size() > room) out.result.stderr_bytes.resize(room);
    out.result.truncated = true;
    return encode(out);
  }

  void handle(unsigned slot, Consumer& consumer, JobMessage& message) {
    auto parsed = parse_cluster_job(message.data());
    if (!parsed) {
      say("a job refused and dropped: " + parsed.error().message);
      (void)message.term();
      return;
    }
    ClusterJob job = std::move(*parsed);
    const std::string job_id = job.job.job_id;
    const std::string key = running_key(job.daemon, job_id);
    {
      std::lock_guard lock(running_mutex_);
      if (running_.count(key) != 0) {
        // Redelivered to the worker that still runs it (its heartbeat was
        // late): the run under way acknowledges the message when it ends.
        say("job " + job_id + " delivered again while it runs here; the run under way answers");
        return;
      }
      running_[key] = RunningJob{job_id, job.daemon, job.job.tool, now_unix_ms()};
    }
    // In-progress acknowledgements from now until the acknowledgement,
    // through the checkout (a bundle, a busy repository) and the run.
    std::mutex beat_mutex;
    std::condition_variable beat_stop;
    bool beating = true;
    std::thread heartbeat([&] {
      // A third of the deadline, and at least once a second (cheap: a few
      // bytes), so a deadline read wrong or shortened later still holds.
      const auto every = std::clamp(consumer.ack_wait / 3, std::chrono::milliseconds(100),
                                    std::chrono::milliseconds(1000));
      std::unique_lock lock(beat_mutex);
      while (!beat_stop.wait_for(lock, every, [&] { return !beating; })) {
        (void)message.in_progress();
      }
    });
    const auto stop_heartbeat = [&] {
      {
        std::lock_guard lock(beat_mutex);
        beating = false;
      }
      beat_stop.notify_all();
      if (heartbeat.joinable()) heartbeat.join();
    };
    const auto forget = [&] {
      std::lock_guard lock(running_mutex_);
      running_.erase(key);
    };

    const std::string progress_subject = daemon_subject("progress", job.daemon);
    Progress started{"started", job_id, options_.id, message.delivery(), job.nonce, std::nullopt};
    (void)client_->publish(progress_subject, encode(started));
    say("job " + job_id + " (" + job.job.tool + ", " + job.repo_name + " at " +
        job.commit.substr(0, 12) + ", delivery " + std::to_string(message.delivery()) + ")");
    auto fetch = [&](const std::vector<std::string>& have, const std::string& path) {
      return fetch_bundle(job, have, path);
    };
    ClusterResult out;
    out.worker = options_.id;
    out.delivery = message.delivery();
    out.nonce = job.nonce;
    out.result.job_id = job_id;
    const auto preparing = Clock::now();
    auto worktree = repos_.prepare(job.repo_key, job.commit, slot, fetch);
    out.prepare_ms = std::chrono::duration<double, std::milli>(Clock::now() - preparing).count();
    if (!worktree) {
      out.result.status = proto::JobStatus::error;
      out.result.error = "worker " + options_.id +
                         " could not check out the job's commit: " + worktree.error().message;
    } else {
      proto::Job local = job.job;
      local.job_id = key;
      local.worktree = *worktree;
      local.cwd = job.cwd.empty() ? *worktree : *worktree + "/" + job.cwd;
      auto on_output = [&](const proto::OutputChunk& chunk) {
        proto::OutputChunk theirs = chunk;
        theirs.job_id = job_id;
        Progress output{"output", job_id, options_.id, message.delivery(), job.nonce, theirs};
        (void)client_->publish(progress_subject, encode(output));
      };
      auto result = runner_->run(local, on_output, {});
      if (!result) {
        say("its runner is gone (" + result.error().message + "): job " + job_id +
            " given back, worker exits");
        stop_heartbeat();
        (void)message.nak();
        exit_code_ = 1;
        stopping_ = true;
        forget();
        return;
      }
      out.result = std::move(*result);
      out.result.job_id = job_id;
    }
    auto sent = client_->publish(daemon_subject("results", job.daemon), fitted_result(out));
    if (!sent) {
      // Say so in a result small enough to travel, rather than lose it.
      ClusterResult failed;
      failed.worker = out.worker;
      failed.delivery = out.delivery;
      failed.nonce = out.nonce;
      failed.result.job_id = job_id;
      failed.result.status = proto::JobStatus::error;
      failed.result.error =
          "worker " + options_.id + " could not send the job's result: " + sent.error().message;
      sent = client_->publish(daemon_subject("results", job.daemon), encode(failed));
    }
    (void)client_->flush(std::chrono::milliseconds(5000));
    stop_heartbeat();
    if (!sent) {
      say("job " + job_id + ": no result could be sent (" + sent.error().message +
          "); given back for another worker");
      (void)message.nak();
    } else if (auto acked = message.ack(); !acked) {
      say("job " + job_id + ": acknowledgement failed (" + acked.error().message +
          "); the server may deliver it again, and looprd keeps one result");
    }
    forget();
  }

  const WorkerOptions& options_;
  std::unique_ptr<RunnerChild> runner_;
  WorkerRepos repos_;
  std::unique_ptr<NatsClient> client_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> exit_code_{0};
  std::mutex running_mutex_;
  std::map<std::string, RunningJob> running_;
};

}  // namespace

int run_worker(const WorkerOptions& options) {
  if (!valid_worker_id(options.id)) {
    say("--id \"" + options.id +
        "\" cannot be a worker id: 1-64 letters, digits, '_' or '-', and not \"local\" or "
        "\"unknown\"");
    return 2;
  }
  WorkerRepos prepare_folders(options.state);
  std::vector<std::string> argv = options.runner_argv;
  // The whole state folder is the runner's writable root: a job sees its
  // own worktree and its repository's git folder (read-only), and nothing
  // else of it (other repositories, bundles, credentials kept there).
  argv.push_back("--root");
  argv.push_back(prepare_folders.state_folder());
  // Stop signals go to the main thread's sigtimedwait only: blocked before
  // any thread exists (the runner child unblocks them for itself).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // The runner is forked before any other thread exists.
  auto runner = RunnerChild::start(argv, options.slots);
  if (!runner) {
    say(runner.error().message);
    return 3;
  }

  NatsSettings nats;
  nats.url = options.nats_url;
  nats.creds_file = options.creds_file;
  nats.tls_ca_file = options.tls_ca_file;
  nats.tls_cert_file = options.tls_cert_file;
  nats.tls_key_file = options.tls_key_file;
  nats.name = "loopr worker " + options.id;
  nats.inbox_prefix = worker_inbox_prefix(options.id);
  std::unique_ptr<NatsClient> client;
  std::string reported;
  for (;;) {
    auto connected = NatsClient::connect(nats, [](bool up, const std::string& why) {
      say(up ? std::string("NATS is back") : "lost NATS (" + why + "); reconnecting");
    });
    if (connected) {
      client = std::move(*connected);
      break;
    }
    // Only a server that cannot be reached yet is waited for; refused or
    // unreadable credentials and bad settings are for the person to fix.
    if (connected.error().code != kClusterUnavailable && connected.error().code != errc::timeout) {
      say(connected.error().message + "; " + connected.error().hint);
      return 2;
    }
    if (connected.error().message != reported) {
      reported = connected.error().message;
      say(reported + "; trying again every 2 s");
    }
    siginfo_t info;
    timespec wait{2, 0};
    if (::sigtimedwait(&stop_signals, &info, &wait) > 0) return 0;
  }
  say("worker " + options.id + " joined " + options.nats_url + " (lanes " +
      std::to_string(options.lanes.size()) + ", " + std::to_string(options.labels.size()) +
      " labels, " + std::to_string(options.slots) + " slots)");
  Worker worker(options, std::move(*runner));
  return worker.run(std::move(client));
}

}  // namespace loopr::cluster
