#include "cluster/nats_client.hpp"

#include <nats/nats.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <mutex>

#include "cluster/nkey.hpp"

namespace loopr::cluster {

namespace {

std::string status_text(natsStatus status) {
  const char* last = nats_GetLastError(nullptr);
  std::string text = natsStatus_GetText(status);
  if (last != nullptr && *last != '\0' && text != last) text += std::string(": ") + last;
  return text;
}

Error nats_error(std::string_view what, natsStatus status,
                 jsErrCode js = static_cast<jsErrCode>(0)) {
  std::string message = std::string(what) + ": " + status_text(status);
  if (js != 0) message += " (JetStream error " + std::to_string(static_cast<int>(js)) + ")";
  if (status == NATS_CONNECTION_AUTH_FAILED || status == NATS_NOT_PERMITTED) {
    return make_error(kClusterAuth, message,
                      "the NATS server refused loopr's credentials or a permission: check "
                      "[cluster] creds_file (or the worker's --creds) and the user's "
                      "permissions on the loopr.> subjects (docs/cluster.md)");
  }
  if (status == NATS_NO_SERVER || status == NATS_CONNECTION_CLOSED ||
      status == NATS_CONNECTION_DISCONNECTED) {
    return make_error(kClusterUnavailable, message,
                      "is nats-server running (with -js) and reachable at [cluster] nats_url?");
  }
  if (status == NATS_TIMEOUT) return make_error(errc::timeout, message);
  return make_error(errc::io, message);
}

// A .creds file holds a JWT and a seed; a bare nkey seed file holds only
// "SU...": each needs its own libnats call.
bool is_creds_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("BEGIN NATS USER JWT") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

struct NatsClient::Callbacks {
  StateHandler on_state;
  std::mutex mutex;
  std::condition_variable changed;
  bool closed = false;
  int live_subscriptions = 0;
};

JobMessage::JobMessage(natsMsg* message) : message_(message) {
  jsMsgMetaData* meta = nullptr;
  if (natsMsg_GetMetaData(&meta, message_) == NATS_OK && meta != nullptr) {
    delivery_ = meta->NumDelivered;
    stream_sequence_ = meta->Sequence.Stream;
    jsMsgMetaData_Destroy(meta);
  }
}

JobMessage::~JobMessage() {
  natsMsg_Destroy(message_);
}

std::string_view JobMessage::data() const {
  const char* data = natsMsg_GetData(message_);
  return data == nullptr
             ? std::string_view()
             : std::string_view(data, static_cast<std::size_t>(natsMsg_GetDataLength(message_)));
}

Result<void> JobMessage::in_progress() {
  if (natsStatus s = natsMsg_InProgress(message_, nullptr); s != NATS_OK) {
    return nats_error("in-progress acknowledgement", s);
  }
  return {};
}

Result<void> JobMessage::ack() {
  jsErrCode js = static_cast<jsErrCode>(0);
  if (natsStatus s = natsMsg_AckSync(message_, nullptr, &js); s != NATS_OK) {
    return nats_error("acknowledgement", s, js);
  }
  return {};
}

Result<void> JobMessage::nak() {
  if (natsStatus s = natsMsg_Nak(message_, nullptr); s != NATS_OK) return nats_error("nak", s);
  return {};
}

Result<void> JobMessage::term() {
  if (natsStatus s = natsMsg_Term(message_, nullptr); s != NATS_OK) return nats_error("term", s);
  return {};
}

PullConsumer::~PullConsumer() {
  natsSubscription_Destroy(subscription_);
}

Result<std::unique_ptr<JobMessage>> PullConsumer::fetch(std::chrono::milliseconds wait) {
  natsMsgList list{};
  jsErrCode js = static_cast<jsErrCode>(0);
  natsStatus s = natsSubscription_Fetch(&list, subscription_, 1, wait.count(), &js);
  if (s == NATS_TIMEOUT) return std::unique_ptr<JobMessage>();
  if (s != NATS_OK) return nats_error("fetching a job", s, js);
  std::unique_ptr<JobMessage> message;
  for (int i = 0; i < list.Count; ++i) {
    if (!message) {
      message = std::make_unique<JobMessage>(list.Msgs[i]);
      list.Msgs[i] = nullptr;  // owned by the JobMessage now
    }
  }
  natsMsgList_Destroy(&list);
  return message;
}

InboxSubscription::~InboxSubscription() {
  natsSubscription_Unsubscribe(subscription_);
  natsSubscription_Destroy(subscription_);
}

Result<NatsMessage> InboxSubscription::next(std::chrono::milliseconds wait) {
  natsMsg* message = nullptr;
  natsStatus s = natsSubscription_NextMsg(&message, subscription_, wait.count());
  if (s != NATS_OK) return nats_error("waiting for a reply", s);
  NatsMessage out;
  out.subject = natsMsg_GetSubject(message);
  if (const char* reply = natsMsg_GetReply(message)) out.reply = reply;
  out.data.assign(natsMsg_GetData(message),
                  static_cast<std::size_t>(natsMsg_GetDataLength(message)));
  natsMsg_Destroy(message);
  return out;
}

namespace {

void state_down(natsConnection* nc, void* closure) {
  auto* handler = static_cast<NatsClient::StateHandler*>(closure);
  if (handler == nullptr) return;
  const char* text = nullptr;
  natsStatus s = natsConnection_GetLastError(nc, &text);
  if (*handler) {
    std::string why = text != nullptr ? text : "";
    if (why.empty() && s != NATS_OK) why = natsStatus_GetText(s);
    (*handler)(false, why.empty() ? std::string("the server closed the connection") : why);
  }
}

void state_up(natsConnection*, void* closure) {
  auto* handler = static_cast<NatsClient::StateHandler*>(closure);
  if (*handler) (*handler)(true, std::string());
}

void deliver(natsConnection*, natsSubscription*, natsMsg* message, void* closure) {
  auto* handler = static_cast<NatsClient::Handler*>(closure);
  NatsMessage out;
  out.subject = natsMsg_GetSubject(message);
  if (const char* reply = natsMsg_GetReply(message)) out.reply = reply;
  if (const char* data = natsMsg_GetData(message)) {
    out.data.assign(data, static_cast<std::size_t>(natsMsg_GetDataLength(message)));
  }
  natsMsg_Destroy(message);
  (*handler)(std::move(out));
}

struct OptionsGuard {
  natsOptions* options = nullptr;
  ~OptionsGuard() {
    if (options != nullptr) natsOptions_Destroy(options);
  }
};

}  // namespace

Result<std::unique_ptr<NatsClient>> NatsClient::connect(const NatsSettings& settings,
                                                        StateHandler on_state) {
  std::unique_ptr<NatsClient> client(new NatsClient());
  client->inbox_prefix_ = settings.inbox_prefix;
  client->callbacks_ = std::make_unique<Callbacks>();
  client->callbacks_->on_state = std::move(on_state);
  OptionsGuard guard;
  if (natsStatus s = natsOptions_Create(&guard.options); s != NATS_OK) {
    return nats_error("NATS options", s);
  }
  natsOptions* o = guard.options;
  auto check = [](natsStatus s, std::string_view what) -> Result<void> {
    if (s != NATS_OK) return nats_error(what, s);
    return {};
  };
  if (auto r = check(natsOptions_SetURL(o, settings.url.c_str()), "[cluster] nats_url"); !r) {
    return std::move(r).error();
  }
  natsOptions_SetTimeout(o, settings.connect_timeout.count());
  if (!settings.name.empty()) natsOptions_SetName(o, settings.name.c_str());
  if (!settings.inbox_prefix.empty()) {
    if (auto r = check(natsOptions_SetCustomInboxPrefix(o, settings.inbox_prefix.c_str()),
                       "NATS inbox prefix");
        !r) {
      return std::move(r).error();
    }
  }
  natsOptions_SetAllowReconnect(o, true);
  natsOptions_SetMaxReconnect(o, -1);
  natsOptions_SetReconnectWait(o, 1000);
  natsOptions_SetPingInterval(o, 5000);
  natsOptions_SetMaxPingsOut(o, 2);
  natsOptions_SetDisconnectedCB(o, state_down, &client->callbacks_->on_state);
  natsOptions_SetReconnectedCB(o, state_up, &client->callbacks_->on_state);
  natsOptions_SetClosedCB(
      o,
      [](natsConnection*, void* closure) {
        auto* callbacks = static_cast<Callbacks*>(closure);
        std::lock_guard lock(callbacks->mutex);
        callbacks->closed = true;
        callbacks->changed.notify_all();
      },
      client->callbacks_.get());
  if (!settings.creds_file.empty()) {
    if (::access(settings.creds_file.c_str(), R_OK) != 0) {
      return make_error(kClusterAuth,
                        "cannot read the NATS credentials file " + settings.creds_file,
                        "check [cluster] creds_file (or --creds): it must be a file this user "
                        "can read");
    }
    if (is_creds_file(settings.creds_file)) {
      if (auto r = check(
              natsOptions_SetUserCredentialsFromFiles(o, settings.creds_file.c_str(), nullptr),
              "NATS credentials");
          !r) {
        return std::move(r).error();
      }
    } else {
      auto seed = read_user_seed(settings.creds_file);
      if (!seed) return std::move(seed).error();
      auto public_key = user_public_key(*seed);
      if (!public_key) return std::move(public_key).error();
      if (auto r = check(
              natsOptions_SetNKeyFromSeed(o, public_key->c_str(), settings.creds_file.c_str()),
              "NATS nkey seed");
          !r) {
        return std::move(r).error();
      }
    }
  }
  if (settings.url.starts_with("tls://") || !settings.tls_ca_file.empty()) {
    natsOptions_SetSecure(o, true);
  }
  if (!settings.tls_ca_file.empty()) {
    if (auto r = check(natsOptions_LoadCATrustedCertificates(o, settings.tls_ca_file.c_str()),
                       "[cluster] tls_ca_file");
        !r) {
      return std::move(r).error();
    }
  }
  if (!settings.tls_cert_file.empty()) {
    if (auto r = check(natsOptions_LoadCertificatesChain(o, settings.tls_cert_file.c_str(),
                                                         settings.tls_key_file.c_str()),
                       "[cluster] tls_cert_file");
        !r) {
      return std::move(r).error();
    }
  }
  if (natsStatus s = natsConnection_Connect(&client->connection_, o); s != NATS_OK) {
    client->connection_ = nullptr;
    return nats_error("connecting to NATS at " + settings.url, s);
  }
  if (natsStatus s = natsConnection_JetStream(&client->jetstream_, client->connection_, nullptr);
      s != NATS_OK) {
    return nats_error("JetStream context", s);
  }
  return client;
}

NatsClient::~NatsClient() {
  if (connection_ != nullptr) {
    natsConnection_Close(connection_);
    // libnats calls its handlers on threads of its own: wait for the last.
    std::unique_lock lock(callbacks_->mutex);
    callbacks_->changed.wait_for(lock, std::chrono::seconds(10), [this] {
      return callbacks_->closed && callbacks_->live_subscriptions == 0;
    });
  }
  {
    std::lock_guard lock(subscriptions_mutex_);
    for (natsSubscription* sub : subscriptions_)
      natsSubscription_Destroy(sub);
    subscriptions_.clear();
  }
  if (jetstream_ != nullptr) jsCtx_Destroy(jetstream_);
  if (connection_ != nullptr) natsConnection_Destroy(connection_);
}

std::size_t NatsClient::max_payload() const {
  const int64_t payload = connection_ != nullptr ? natsConnection_GetMaxPayload(connection_) : 0;
  return payload > 0 ? static_cast<std::size_t>(payload) : std::size_t{1024 * 1024};
}

bool NatsClient::connected() const {
  return connection_ != nullptr && natsConnection_Status(connection_) == NATS_CONN_STATUS_CONNECTED;
}

Result<void> NatsClient::publish(const std::string& subject, std::string_view data) {
  if (natsStatus s = natsConnection_Publish(connection_, subject.c_str(), data.data(),
                                            static_cast<int>(data.size()));
      s != NATS_OK) {
    return nats_error("publishing on " + subject, s);
  }
  return {};
}

Result<void> NatsClient::publish_request(const std::string& subject, const std::string& reply,
                                         std::string_view data) {
  if (natsStatus s = natsConnection_PublishRequest(connection_, subject.c_str(), reply.c_str(),
                                                   data.data(), static_cast<int>(data.size()));
      s != NATS_OK) {
    return nats_error("requesting on " + subject, s);
  }
  return {};
}

Result<void> NatsClient::flush(std::chrono::milliseconds wait) {
  if (natsStatus s = natsConnection_FlushTimeout(connection_, wait.count()); s != NATS_OK) {
    return nats_error("flushing to NATS", s);
  }
  return {};
}

std::string NatsClient::new_inbox() const {
  natsInbox* inbox = nullptr;
  if (natsInbox_Create(&inbox) != NATS_OK) return "_INBOX.loopr";
  // natsInbox_Create knows no custom prefix: "_INBOX.<unique>" becomes
  // "<prefix>.<unique>".
  std::string out = inbox;
  natsInbox_Destroy(inbox);
  if (!inbox_prefix_.empty() && out.starts_with("_INBOX.")) {
    out = inbox_prefix_ + out.substr(6);
  }
  return out;
}

Result<void> NatsClient::subscribe(const std::string& subject, Handler handler) {
  auto owned = std::make_unique<Handler>(std::move(handler));
  natsSubscription* sub = nullptr;
  if (natsStatus s =
          natsConnection_Subscribe(&sub, connection_, subject.c_str(), deliver, owned.get());
      s != NATS_OK) {
    return nats_error("subscribing to " + subject, s);
  }
  // Results and progress come in bursts: room for many before any is dropped.
  natsSubscription_SetPendingLimits(sub, 65536, 256 * 1024 * 1024);
  {
    std::lock_guard lock(callbacks_->mutex);
    ++callbacks_->live_subscriptions;
  }
  natsSubscription_SetOnCompleteCB(
      sub,
      [](void* closure) {
        auto* callbacks = static_cast<Callbacks*>(closure);
        std::lock_guard lock(callbacks->mutex);
        --callbacks->live_subscriptions;
        callbacks->changed.notify_all();
      },
      callbacks_.get());
  std::lock_guard lock(subscriptions_mutex_);
  subscriptions_.push_back(sub);
  handlers_.push_back(std::move(owned));
  return {};
}

Result<std::unique_ptr<InboxSubscription>> NatsClient::subscribe_sync(const std::string& subject) {
  natsSubscription* sub = nullptr;
  if (natsStatus s = natsConnection_SubscribeSync(&sub, connection_, subject.c_str());
      s != NATS_OK) {
    return nats_error("subscribing to " + subject, s);
  }
  return std::make_unique<InboxSubscription>(sub);
}

Result<void> NatsClient::ensure_work_queue(const std::string& stream, const std::string& subjects) {
  jsStreamConfig config;
  jsStreamConfig_Init(&config);
  config.Name = stream.c_str();
  const char* subject_list[] = {subjects.c_str()};
  config.Subjects = subject_list;
  config.SubjectsLen = 1;
  config.Retention = js_WorkQueuePolicy;
  config.Storage = js_FileStorage;
  config.MaxAge = std::int64_t{86400} * 1'000'000'000;
  jsStreamInfo* info = nullptr;
  jsErrCode js = static_cast<jsErrCode>(0);
  natsStatus s = js_AddStream(&info, jetstream_, &config, nullptr, &js);
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (s == NATS_OK || js == JSStreamNameExistErr) return {};
  if (s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT) {
    return make_error(kClusterUnavailable,
                      "the NATS server did not answer for JetStream: " + status_text(s),
                      "start nats-server with JetStream enabled (-js, or jetstream {} in its "
                      "configuration)");
  }
  return nats_error("making the JetStream stream " + stream, s, js);
}

Result<bool> NatsClient::stream_exists(const std::string& stream) {
  jsStreamInfo* info = nullptr;
  jsErrCode js = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&info, jetstream_, stream.c_str(), nullptr, &js);
  if (info != nullptr) jsStreamInfo_Destroy(info);
  if (s == NATS_OK) return true;
  if (s == NATS_NOT_FOUND || js == JSStreamNotFoundErr) return false;
  return nats_error("looking up the stream " + stream, s, js);
}

Result<void> NatsClient::ensure_consumer(const std::string& stream, const std::string& durable,
                                         const std::string& subject,
                                         std::chrono::milliseconds ack_wait) {
  jsConsumerConfig config;
  jsConsumerConfig_Init(&config);
  config.Durable = durable.c_str();
  config.AckPolicy = js_AckExplicit;
  config.AckWait = static_cast<std::int64_t>(ack_wait.count()) * 1'000'000;
  config.FilterSubject = subject.c_str();
  config.MaxAckPending = 4096;
  // A job that kills every worker's runner is not passed round forever.
  config.MaxDeliver = kMaxDeliveries;
  jsConsumerInfo* info = nullptr;
  jsErrCode js = static_cast<jsErrCode>(0);
  natsStatus s = js_AddConsumer(&info, jetstream_, stream.c_str(), &config, nullptr, &js);
  if (info != nullptr) jsConsumerInfo_Destroy(info);
  if (s == NATS_OK) return {};
  // It exists with other settings (an earlier ack_wait): take ours.
  info = nullptr;
  js = static_cast<jsErrCode>(0);
  s = js_UpdateConsumer(&info, jetstream_, stream.c_str(), &config, nullptr, &js);
  if (info != nullptr) jsConsumerInfo_Destroy(info);
  if (s == NATS_OK) return {};
  return nats_error("making the JetStream consumer " + durable, s, js);
}

Result<std::chrono::milliseconds> NatsClient::consumer_ack_wait(const std::string& stream,
                                                                const std::string& durable) {
  jsConsumerInfo* info = nullptr;
  jsErrCode js = static_cast<jsErrCode>(0);
  if (natsStatus s =
          js_GetConsumerInfo(&info, jetstream_, stream.c_str(), durable.c_str(), nullptr, &js);
      s != NATS_OK) {
    if (info != nullptr) jsConsumerInfo_Destroy(info);
    return nats_error("consumer info of " + durable, s, js);
  }
  const auto wait = std::chrono::milliseconds(info->Config->AckWait / 1'000'000);
  jsConsumerInfo_Destroy(info);
  return wait;
}

Result<std::unique_ptr<PullConsumer>> NatsClient::bind_consumer(const std::string& stream,
                                                                const std::string& durable,
                                                                const std::string& subject) {
  jsSubOptions options;
  jsSubOptions_Init(&options);
  options.Stream = stream.c_str();
  options.Consumer = durable.c_str();
  options.ManualAck = true;
  natsSubscription* sub = nullptr;
  jsErrCode js = static_cast<jsErrCode>(0);
  natsStatus s =
      js_PullSubscribe(&sub, jetstream_, subject.c_str(), durable.c_str(), nullptr, &options, &js);
  if (s == NATS_OK) return std::make_unique<PullConsumer>(sub);
  if (s == NATS_NOT_FOUND || js == JSConsumerNotFoundErr || js == JSStreamNotFoundErr) {
    return make_error(errc::not_found, "no consumer " + durable + " yet on stream " + stream);
  }
  return nats_error("binding to the consumer " + durable, s, js);
}

Result<std::uint64_t> NatsClient::publish_job(const std::string& subject, std::string_view data) {
  jsPubAck* ack = nullptr;
  jsErrCode js = static_cast<jsErrCode>(0);
  natsStatus s = js_Publish(&ack, jetstream_, subject.c_str(), data.data(),
                            static_cast<int>(data.size()), nullptr, &js);
  if (s != NATS_OK) {
    if (ack != nullptr) jsPubAck_Destroy(ack);
    return nats_error("queueing a job on " + subject, s, js);
  }
  const std::uint64_t sequence = ack->Sequence;
  jsPubAck_Destroy(ack);
  return sequence;
}

Result<void> NatsClient::delete_message(const std::string& stream, std::uint64_t sequence) {
  jsErrCode js = static_cast<jsErrCode>(0);
  if (natsStatus s = js_DeleteMsg(jetstream_, stream.c_str(), sequence, nullptr, &js);
      s != NATS_OK) {
    return nats_error("removing a queued job", s, js);
  }
  return {};
}

}  // namespace loopr::cluster
