#include "loopr-fetch/fetch_url.hpp"

#include <curl/curl.h>

#include <memory>

namespace loopr::fetch {
namespace {

struct UrlDeleter {
  void operator()(CURLU* url) const { curl_url_cleanup(url); }
};
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

struct CurlStringDeleter {
  void operator()(char* text) const { curl_free(text); }
};

// One part of a parsed URL; empty when it is absent.
std::string url_part(CURLU* url, CURLUPart part) {
  char* raw = nullptr;
  if (curl_url_get(url, part, &raw, 0) != CURLUE_OK || raw == nullptr) return {};
  std::unique_ptr<char, CurlStringDeleter> owned(raw);
  return owned.get();
}

bool is_http_scheme(const std::string& scheme) {
  return scheme == "http" || scheme == "https";
}

}  // namespace

Result<std::string> checked_fetch_url(std::string_view url) {
  const std::string example = "send an absolute URL such as \"https://example.com/page\"";
  if (url.size() > kMaxUrlBytes) {
    return make_error(errc::invalid_arguments,
                      "url is " + std::to_string(url.size()) + " bytes; web_fetch takes at most " +
                          std::to_string(kMaxUrlBytes),
                      "send a shorter URL");
  }
  UrlHandle handle(curl_url());
  if (!handle) return make_error(errc::internal, "out of memory parsing a URL");
  const std::string text(url);
  const CURLUcode parsed = curl_url_set(handle.get(), CURLUPART_URL, text.c_str(), 0);
  if (parsed != CURLUE_OK) {
    return make_error(
        errc::invalid_arguments,
        "url '" + text + "' is not a valid absolute URL (" + curl_url_strerror(parsed) + ")",
        example);
  }
  const std::string scheme = url_part(handle.get(), CURLUPART_SCHEME);
  if (!is_http_scheme(scheme)) {
    return make_error(errc::invalid_arguments,
                      "web_fetch fetches only http:// and https:// URLs, not " + scheme + ":",
                      "read local files with read_file; " + example);
  }
  if (url_part(handle.get(), CURLUPART_HOST).empty()) {
    return make_error(errc::invalid_arguments, "url '" + text + "' has no host", example);
  }
  return url_part(handle.get(), CURLUPART_URL);
}

std::string resolve_http_url(const std::string& base, std::string_view reference) {
  if (reference.starts_with('#')) {
    // libcurl 7.88 resolves a fragment-only reference against the base's
    // folder, not the page (RFC 3986 5.2.2 keeps the whole path and query).
    const std::string page = base.substr(0, base.find('#'));
    const std::string normalized = resolve_http_url(page, page);
    return normalized.empty() ? normalized : normalized + std::string(reference);
  }
  UrlHandle handle(curl_url());
  if (!handle || curl_url_set(handle.get(), CURLUPART_URL, base.c_str(), 0) != CURLUE_OK) return {};
  const std::string text(reference);
  // With a base URL in the handle, a relative reference is resolved against it.
  if (curl_url_set(handle.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK) return {};
  if (!is_http_scheme(url_part(handle.get(), CURLUPART_SCHEME))) return {};
  return url_part(handle.get(), CURLUPART_URL);
}

std::string host_of_url(const std::string& url) {
  UrlHandle handle(curl_url());
  if (!handle || curl_url_set(handle.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return {};
  return url_part(handle.get(), CURLUPART_HOST);
}

}  // namespace loopr::fetch
