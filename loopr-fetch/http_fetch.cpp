#include "loopr-fetch/http_fetch.hpp"

#include <curl/curl.h>
#include <sys/socket.h>

#include <cstdlib>
#include <memory>
#include <optional>

#include "loopr-fetch/fetch_url.hpp"

namespace loopr::fetch {
namespace {

constexpr const char* kUserAgent = "loopr-web-fetch/1 (+https://github.com/loopr)";

struct EasyDeleter {
  void operator()(CURL* easy) const { curl_easy_cleanup(easy); }
};
using EasyHandle = std::unique_ptr<CURL, EasyDeleter>;

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using HeaderList = std::unique_ptr<curl_slist, SlistDeleter>;

// State the callbacks share with the transfer; lives on http_request's stack.
struct Transfer {
  const AddressPolicy* policy = nullptr;
  std::string url;  // the hop in progress, for messages (HttpRequest::shown_url if set)
  std::optional<Error> refusal;
  std::string body;
  std::size_t max_body_bytes = 0;
  bool body_truncated = false;
};

// CURLOPT_OPENSOCKETFUNCTION: every connection of the transfer is made here,
// after DNS, so the address it is about to reach is the one checked.
curl_socket_t open_checked_socket(void* context, curlsocktype purpose, curl_sockaddr* address) {
  auto* transfer = static_cast<Transfer*>(context);
  if (purpose != CURLSOCKTYPE_IPCXN) {
    if (!transfer->refusal) {
      transfer->refusal = make_error(errc::sandbox_denied, "web_fetch opens only TCP connections");
    }
    return CURL_SOCKET_BAD;
  }
  const auto ip = IpAddress::from_sockaddr(&address->addr, address->addrlen);
  if (!ip) {
    if (!transfer->refusal) {
      transfer->refusal =
          make_error(errc::sandbox_denied, "web_fetch connects only to IPv4 and IPv6 addresses");
    }
    return CURL_SOCKET_BAD;
  }
  if (auto verdict = transfer->policy->check(*ip, transfer->url); !verdict) {
    // With several addresses for a name, curl tries the next one; the first
    // refusal is what the caller hears if none connects.
    if (!transfer->refusal) transfer->refusal = std::move(verdict).error();
    return CURL_SOCKET_BAD;
  }
  return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

std::size_t keep_body(char* data, std::size_t size, std::size_t count, void* context) {
  auto* transfer = static_cast<Transfer*>(context);
  const std::size_t bytes = size * count;
  const std::size_t room = transfer->max_body_bytes - transfer->body.size();
  if (bytes > room) {
    transfer->body.append(data, room);
    transfer->body_truncated = true;
    return 0;  // CURLE_WRITE_ERROR: the transfer stops here
  }
  transfer->body.append(data, bytes);
  return bytes;
}

Error transfer_error(CURLcode code, const char* detail, const Transfer& transfer) {
  const std::string what =
      std::string(curl_easy_strerror(code)) +
      (detail != nullptr && detail[0] != '\0' ? ": " + std::string(detail) : "");
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
      return make_error(
          errc::not_found,
          "cannot resolve host '" + host_of_url(transfer.url) + "' of " + transfer.url,
          "check the host name in the URL");
    case CURLE_OPERATION_TIMEDOUT:
      return make_error(errc::timeout, "fetching " + transfer.url + " timed out (" + what + ")",
                        "the server is slow or unreachable; try again later or another source");
    case CURLE_UNSUPPORTED_PROTOCOL:
      return make_error(errc::invalid_arguments, "cannot fetch " + transfer.url + ": " + what,
                        "web_fetch fetches only http:// and https:// URLs");
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
      return make_error(errc::io, "TLS failed for " + transfer.url + ": " + what,
                        "the site's certificate could not be verified; do not work around "
                        "this, use another source");
    default:
      return make_error(errc::io, "fetching " + transfer.url + " failed: " + what,
                        "check the URL, or try again later");
  }
}

bool is_redirect(long status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

void global_init_once() {
  static const CURLcode init = curl_global_init(CURL_GLOBAL_DEFAULT);
  (void)init;
}

// The lane's egress proxy, when the runner gave the job one (a net or heavy
// lane with the sandbox on): every connection then goes through it, and the
// proxy judges the addresses with the same AddressPolicy.
const char* egress_proxy() {
  const char* url = std::getenv("LOOPR_EGRESS_PROXY");
  return url != nullptr && url[0] != '\0' ? url : nullptr;
}

// The egress proxy's own answer in place of the server's: a refusal (403) or
// a target it could not reach (502), read from its X-Loopr-Egress headers on
// the CONNECT response (https) or on the response itself (http).
std::optional<Error> proxy_verdict(CURL* e, const Transfer& transfer) {
  for (const unsigned int origin :
       {static_cast<unsigned int>(CURLH_CONNECT), static_cast<unsigned int>(CURLH_HEADER)}) {
    curl_header* rule = nullptr;
    curl_header* message = nullptr;
    if (curl_easy_header(e, "X-Loopr-Egress", 0, origin, -1, &rule) != CURLHE_OK ||
        curl_easy_header(e, "X-Loopr-Egress-Message", 0, origin, -1, &message) != CURLHE_OK) {
      continue;
    }
    const std::string why = message->value;
    const std::string_view name = rule->value;
    if (name == "unresolved") {
      return make_error(errc::not_found, why + " (for " + transfer.url + ")",
                        "check the host name in the URL");
    }
    if (name == "unreachable" || name == "bad_request") {
      return make_error(errc::io, why + " (for " + transfer.url + ")",
                        "check the URL, or try again later");
    }
    return make_error(errc::sandbox_denied, why + " (for " + transfer.url + ")",
                      "fetch a public URL instead; the message says which loopr.toml key the "
                      "user could change to allow this one");
  }
  return std::nullopt;
}

// Every option of a transfer, for web_fetch and web_search alike: how it
// connects (through the lane's egress proxy, or directly with every socket
// checked by the address policy), the method, headers and body, the caps and
// timeouts. `transfer`, `detail` and `headers` must outlive the handle's use.
Result<void> set_up_transfer(CURL* e, const HttpRequest& request, const FetchLimits& limits,
                             Transfer& transfer, char* detail, HeaderList& headers) {
  for (const std::string& header : request.headers) {
    curl_slist* grown = curl_slist_append(headers.get(), header.c_str());
    if (grown == nullptr) return make_error(errc::internal, "curl_slist_append failed");
    (void)headers.release();
    headers.reset(grown);
  }
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, detail);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);  // each hop is checked below
  if (const char* proxy = egress_proxy()) {
    curl_easy_setopt(e, CURLOPT_PROXY, proxy);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "");  // every host through it
  } else {
    curl_easy_setopt(e, CURLOPT_PROXY, "");  // never a proxy from the environment
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_checked_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, &transfer);
  }
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, keep_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(e, CURLOPT_USERAGENT, kUserAgent);
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING,
                   "");  // what libcurl can decode; the cap applies after
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(limits.connect_timeout.count()));
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, static_cast<long>(limits.stall_timeout.count()));
  if (limits.total_timeout.count() > 0) {
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(limits.total_timeout.count()));
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
  if (request.method == "POST") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, request.body.c_str());
  } else if (request.method != "GET") {
    return make_error(errc::internal, "http_request: unsupported method " + request.method);
  }
  return {};
}

}  // namespace

Result<FetchedPage> http_request(const HttpRequest& request, const AddressPolicy& policy,
                                 const FetchLimits& limits) {
  global_init_once();
  EasyHandle easy(curl_easy_init());
  if (!easy) return make_error(errc::internal, "curl_easy_init failed");
  Transfer transfer;
  transfer.policy = &policy;
  transfer.max_body_bytes = limits.max_body_bytes;
  char detail[CURL_ERROR_SIZE] = {};
  HeaderList headers;
  CURL* e = easy.get();
  if (auto set = set_up_transfer(e, request, limits, transfer, detail, headers); !set) {
    return std::move(set).error();
  }

  const std::string& url = request.shown_url.empty() ? request.url : request.shown_url;
  std::string hop = request.url;
  FetchedPage page;
  transfer.url = url;
  for (;;) {
    transfer.body.clear();
    transfer.body_truncated = false;
    transfer.refusal.reset();
    detail[0] = '\0';
    curl_easy_setopt(e, CURLOPT_URL, hop.c_str());
    const CURLcode code = curl_easy_perform(e);
    if (!transfer.refusal && egress_proxy() != nullptr)
      transfer.refusal = proxy_verdict(e, transfer);
    if (transfer.refusal) {
      Error refusal = std::move(*transfer.refusal);
      if (page.redirects > 0) {
        refusal.message += " (reached through " + std::to_string(page.redirects) +
                           " redirect(s) from " + url + ")";
      }
      return refusal;
    }
    if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && transfer.body_truncated)) {
      return transfer_error(code, detail, transfer);
    }
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    char* location = nullptr;
    curl_easy_getinfo(e, CURLINFO_REDIRECT_URL, &location);
    if (is_redirect(status) && location != nullptr && request.method == "GET") {
      if (page.redirects >= limits.max_redirects) {
        return make_error(errc::io,
                          url + " redirected more than " + std::to_string(limits.max_redirects) +
                              " times (last to " + location + ")",
                          "fetch the final URL directly if you know it");
      }
      auto next = checked_fetch_url(location);
      if (!next) {
        return make_error(errc::invalid_arguments,
                          transfer.url + " redirected to '" + location +
                              "', which web_fetch does not follow: " + next.error().message,
                          "web_fetch follows redirects to http:// and https:// URLs only");
      }
      hop = std::move(*next);
      transfer.url = hop;
      ++page.redirects;
      continue;
    }
    page.url = transfer.url;
    page.status = status;
    char* content_type = nullptr;
    curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &content_type);
    if (content_type != nullptr) page.content_type = content_type;
    char* ip = nullptr;
    curl_easy_getinfo(e, CURLINFO_PRIMARY_IP, &ip);
    if (ip != nullptr) page.remote_address = ip;
    curl_header* retry_after = nullptr;
    if (curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &retry_after) == CURLHE_OK) {
      page.retry_after = retry_after->value;
    }
    page.body = std::move(transfer.body);
    page.body_truncated = transfer.body_truncated;
    return page;
  }
}

}  // namespace loopr::fetch
