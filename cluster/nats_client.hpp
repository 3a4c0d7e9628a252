// NatsClient: loopr's use of the NATS C client (libnats 3.4, Debian 12):
// one connection, its core subjects and the JetStream work queue. A thin
// RAII layer over the C API, so that every status becomes a loopr::Error
// that says what to change (credentials refused, server unreachable,
// JetStream not enabled), and every handle is released once.
//
// Threads: libnats runs its own threads. A Handler given to subscribe() is
// called on one of them, never concurrently for one subscription; it must
// not block for long (hand the message to your own thread or io_context).
// Every other method may be called from any thread.
//
// Destruction closes the connection and waits (up to 10 s) until libnats
// has called its last callback — the connection's closed handler and each
// subscription's completion — so no handler runs on a freed client.
//
// After the first successful connect(), the library reconnects by itself,
// forever, once a second; subscriptions and pull consumers survive that.
// on_state tells of each loss and return of the connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"

struct __natsConnection;
struct __natsSubscription;
struct __natsMsg;
struct __jsCtx;

namespace loopr::cluster {

inline constexpr const char* kClusterAuth = "cluster_auth";
inline constexpr const char* kClusterUnavailable = "cluster_unavailable";
// Deliveries of one job at most (the consumer's MaxDeliver).
inline constexpr int kMaxDeliveries = 4;

struct NatsSettings {
  std::string url;         // nats://HOST:PORT or tls://HOST:PORT (a comma-separated list)
  std::string creds_file;  // a .creds file (JWT + seed), or a bare nkey seed file; "" = none
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string name;  // the connection's name on the server (monitoring)
  // Where replies to this client go (`_INBOX.<who>`), so the server's
  // permissions can give each user its own inboxes and no one else's.
  // Empty: libnats' default, `_INBOX`.
  std::string inbox_prefix;
  std::chrono::milliseconds connect_timeout{2000};
};

struct NatsMessage {
  std::string subject;
  std::string reply;
  std::string data;
};

// A JetStream message taken from a pull consumer: acknowledge it once.
class JobMessage {
 public:
  explicit JobMessage(__natsMsg* message);
  ~JobMessage();
  JobMessage(const JobMessage&) = delete;
  JobMessage& operator=(const JobMessage&) = delete;

  std::string_view data() const;
  // How many times the server has delivered it (1: first), and its stream
  // sequence; 0 when the metadata cannot be read.
  std::uint64_t delivery() const { return delivery_; }
  std::uint64_t stream_sequence() const { return stream_sequence_; }
  // "Still working": resets the acknowledgement deadline.
  Result<void> in_progress();
  // Done: the server removes it from the work queue (waits for its answer).
  Result<void> ack();
  // Not for this worker: the server delivers it to another at once.
  Result<void> nak();
  // Never deliver again (malformed).
  Result<void> term();

 private:
  __natsMsg* message_;
  std::uint64_t delivery_ = 0;
  std::uint64_t stream_sequence_ = 0;
};

class PullConsumer {
 public:
  explicit PullConsumer(__natsSubscription* subscription) : subscription_(subscription) {}
  ~PullConsumer();
  PullConsumer(const PullConsumer&) = delete;
  PullConsumer& operator=(const PullConsumer&) = delete;
  // One message, or nullopt when none came within `wait`.
  Result<std::unique_ptr<JobMessage>> fetch(std::chrono::milliseconds wait);

 private:
  __natsSubscription* subscription_;
};

// A synchronous subscription (a bundle's reply inbox).
class InboxSubscription {
 public:
  explicit InboxSubscription(__natsSubscription* subscription) : subscription_(subscription) {}
  ~InboxSubscription();
  InboxSubscription(const InboxSubscription&) = delete;
  InboxSubscription& operator=(const InboxSubscription&) = delete;
  // The next message; errc::timeout when none came within `wait`.
  Result<NatsMessage> next(std::chrono::milliseconds wait);

 private:
  __natsSubscription* subscription_;
};

class NatsClient {
 public:
  using Handler = std::function<void(NatsMessage message)>;
  // up: connected again; !up: lost (why says what the library said).
  using StateHandler = std::function<void(bool up, const std::string& why)>;

  // One attempt. The error says what to do: kClusterAuth for credentials
  // the server refused (or a creds file that cannot be read),
  // kClusterUnavailable for a server that cannot be reached.
  static Result<std::unique_ptr<NatsClient>> connect(const NatsSettings& settings,
                                                     StateHandler on_state = {});
  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  bool connected() const;
  // The largest payload the server takes (its max_payload; 1 MiB by default).
  std::size_t max_payload() const;
  Result<void> publish(const std::string& subject, std::string_view data);
  Result<void> publish_request(const std::string& subject, const std::string& reply,
                               std::string_view data);
  Result<void> flush(std::chrono::milliseconds wait);
  std::string new_inbox() const;
  // Kept until the client is destroyed.
  Result<void> subscribe(const std::string& subject, Handler handler);
  Result<std::unique_ptr<InboxSubscription>> subscribe_sync(const std::string& subject);

  // JetStream. The work-queue stream `stream` over `subjects` (file
  // storage, messages kept a day at most): made when missing; an existing
  // one is used as it is.
  Result<void> ensure_work_queue(const std::string& stream, const std::string& subjects);
  Result<bool> stream_exists(const std::string& stream);
  // A durable pull consumer of `stream` for `subject`, made or updated to
  // `ack_wait` (explicit acks, delivered until acknowledged, at most
  // kMaxDeliveries times).
  Result<void> ensure_consumer(const std::string& stream, const std::string& durable,
                               const std::string& subject, std::chrono::milliseconds ack_wait);
  // A consumer's acknowledgement deadline, as the server holds it.
  Result<std::chrono::milliseconds> consumer_ack_wait(const std::string& stream,
                                                      const std::string& durable);
  // Binds to an existing consumer (errc::not_found while it does not exist).
  Result<std::unique_ptr<PullConsumer>> bind_consumer(const std::string& stream,
                                                      const std::string& durable,
                                                      const std::string& subject);
  // Publishes to the stream and waits for its acknowledgement: the message's
  // stream sequence.
  Result<std::uint64_t> publish_job(const std::string& subject, std::string_view data);
  Result<void> delete_message(const std::string& stream, std::uint64_t sequence);

 private:
  NatsClient() = default;
  struct Callbacks;

  std::string inbox_prefix_;
  __natsConnection* connection_ = nullptr;
  __jsCtx* jetstream_ = nullptr;
  std::unique_ptr<Callbacks> callbacks_;
  std::mutex subscriptions_mutex_;
  std::vector<__natsSubscription*> subscriptions_;
  std::vector<std::unique_ptr<Handler>> handlers_;
};

}  // namespace loopr::cluster
