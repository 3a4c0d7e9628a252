#include "loopr-fetch/search_providers.hpp"

#include <curl/curl.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "common/secret.hpp"
#include "common/utf8.hpp"
#include "loopr-fetch/fetch_url.hpp"
#include "loopr-fetch/html_text.hpp"

namespace loopr::fetch {
namespace {

using Json = nlohmann::json;

// Longer titles and snippets are cut: a result list is read by a model.
constexpr std::size_t kMaxTitleBytes = 300;
constexpr std::size_t kMaxSnippetBytes = 600;

// How each provider's answer holds its results.
struct AnswerShape {
  std::string_view kind;
  std::string_view list;     // the results' array (Brave: inside "web")
  std::string_view url;      // a result's URL field
  std::string_view snippet;  // a result's snippet field
  // A key whose presence says the answer is a valid one without results
  // (the list is left out when nothing was found).
  std::string_view empty_marker;
};

constexpr AnswerShape kShapes[] = {
    {"brave", "results", "url", "description", "type"},
    {"google", "items", "link", "snippet", "kind"},
    {"serper", "organic", "link", "snippet", "searchParameters"},
    {"searxng", "results", "url", "content", ""},
};

const AnswerShape* shape_of(std::string_view kind) {
  for (const AnswerShape& shape : kShapes) {
    if (shape.kind == kind) return &shape;
  }
  return nullptr;
}

// `text` percent-encoded for a query string.
std::string query_component(std::string_view text) {
  std::unique_ptr<char, decltype(&curl_free)> escaped(
      curl_easy_escape(nullptr, text.data(), static_cast<int>(text.size())), &curl_free);
  return escaped ? std::string(escaped.get()) : std::string();
}

Error protocol_error(std::string_view kind, const std::string& what) {
  return make_error(
      errc::provider_protocol,
      "web_search: the " + std::string(kind) +
          " search provider sent an answer that is not its documented format: " + what,
      "try again later; if it persists, the provider's base_url in loopr.toml "
      "[web_search." +
          std::string(kind) + "] may not point at its search API");
}

// Plain text: markup (Brave's <strong>) and entities removed, whitespace
// collapsed, cut to `cap` bytes on a character boundary.
std::string plain_text(const std::string& text, std::size_t cap) {
  std::string plain = text;
  if (text.find_first_of("<&") != std::string::npos) {
    plain = html_to_text(text, "utf-8", TextStyle::text, "").text;
  }
  std::string collapsed;
  bool space = false;
  for (char c : to_lossy_utf8(plain)) {
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      space = !collapsed.empty();
      continue;
    }
    if (space) collapsed += ' ';
    space = false;
    collapsed += c;
  }
  if (collapsed.size() > cap) {
    collapsed.resize(utf8_safe_prefix(collapsed, cap));
    collapsed += "...";
  }
  return collapsed;
}

}  // namespace

Result<HttpRequest> search_request(const SearchProvider& provider, std::string_view query,
                                   int count) {
  std::string base = provider.base_url;
  while (base.ends_with('/'))
    base.pop_back();
  const std::string q = query_component(query);
  const std::string n = std::to_string(count);
  HttpRequest request;
  if (provider.kind == "brave") {
    request.shown_url = base + "/res/v1/web/search";
    request.url = request.shown_url + "?q=" + q + "&count=" + n;
    request.headers = {"Accept: application/json", "X-Subscription-Token: " + provider.api_key};
  } else if (provider.kind == "google") {
    request.shown_url = base + "/customsearch/v1";
    request.url = request.shown_url + "?key=" + query_component(provider.api_key) +
                  "&cx=" + query_component(provider.cx) + "&q=" + q + "&num=" + n;
    request.headers = {"Accept: application/json"};
  } else if (provider.kind == "serper") {
    request.method = "POST";
    request.shown_url = base + "/search";
    request.url = request.shown_url;
    request.headers = {"Accept: application/json", "Content-Type: application/json",
                       "X-API-KEY: " + provider.api_key};
    request.body = Json{{"q", query}, {"num", count}}.dump();
  } else if (provider.kind == "searxng") {
    request.shown_url = base + "/search";
    request.url = request.shown_url + "?q=" + q + "&format=json";
    request.headers = {"Accept: application/json"};
  } else {
    return make_error(errc::invalid_arguments,
                      "web_search: unknown search provider '" + provider.kind + "'",
                      "set [web_search] provider in loopr.toml to brave, google, serper or "
                      "searxng");
  }
  if (auto checked = checked_fetch_url(request.shown_url); !checked) {
    return make_error(errc::invalid_arguments,
                      "web_search: the " + provider.kind + " provider's base_url '" +
                          provider.base_url + "' is not usable: " + checked.error().message,
                      "set [web_search." + provider.kind +
                          "] base_url in loopr.toml to an http:// or https:// URL");
  }
  return request;
}

std::string redact_key(std::string text, const SearchProvider& provider) {
  if (provider.api_key.empty()) return text;
  const Secret raw(provider.api_key);
  const Secret encoded(query_component(provider.api_key));
  return redact(redact(std::move(text), &raw), &encoded);
}

Result<std::vector<SearchResult>> parse_search_results(std::string_view kind, std::string_view body,
                                                       std::size_t max) {
  const AnswerShape* shape = shape_of(kind);
  if (shape == nullptr) return protocol_error(kind, "no such provider");
  const Json answer = Json::parse(body, nullptr, false);
  if (answer.is_discarded()) return protocol_error(kind, "the body is not JSON");
  if (!answer.is_object()) return protocol_error(kind, "the body is not a JSON object");
  const Json* holder = &answer;
  if (kind == "brave") {
    auto web = answer.find("web");
    if (web == answer.end()) {
      if (answer.contains("type")) return std::vector<SearchResult>{};
      return protocol_error(kind, "it has no \"web\" object");
    }
    if (!web->is_object()) return protocol_error(kind, "\"web\" is not an object");
    holder = &*web;
  }
  const std::string list_name(shape->list);
  auto list = holder->find(list_name);
  if (list == holder->end()) {
    if (!shape->empty_marker.empty() && answer.contains(shape->empty_marker)) {
      return std::vector<SearchResult>{};
    }
    return protocol_error(kind, "it has no \"" + list_name + "\" list");
  }
  if (!list->is_array()) return protocol_error(kind, "\"" + list_name + "\" is not a list");

  std::vector<SearchResult> results;
  for (std::size_t i = 0; i < list->size() && results.size() < max; ++i) {
    const Json& item = (*list)[i];
    const std::string where = list_name + "[" + std::to_string(i) + "]";
    if (!item.is_object()) return protocol_error(kind, where + " is not an object");
    auto field = [&](std::string_view name, bool required) -> Result<std::string> {
      auto it = item.find(std::string(name));
      if (it == item.end() || it->is_null()) {
        if (!required) return std::string();
        return protocol_error(kind, where + " has no \"" + std::string(name) + "\"");
      }
      if (!it->is_string()) {
        return protocol_error(kind, where + "." + std::string(name) + " is not a string");
      }
      return it->get<std::string>();
    };
    auto title = field("title", true);
    if (!title) return std::move(title).error();
    auto url = field(shape->url, true);
    if (!url) return std::move(url).error();
    auto snippet = field(shape->snippet, false);
    if (!snippet) return std::move(snippet).error();
    results.push_back({plain_text(*title, kMaxTitleBytes), to_lossy_utf8(*url),
                       plain_text(*snippet, kMaxSnippetBytes)});
  }
  return results;
}

}  // namespace loopr::fetch
