// offload(): runs blocking work (a git command) on a worker pool and resumes
// the calling coroutine on its own executor with the result, so the io
// thread never waits for a child process.
//
// `work` is taken by reference and must be a named local of the caller: g++
// 12 destroys a temporary in a co_await expression twice (GCC bug 100611),
// which for a lambda holding strings is a double free.
#pragma once

#include <asio/co_spawn.hpp>
#include <asio/thread_pool.hpp>
#include <asio/use_awaitable.hpp>
#include <optional>
#include <type_traits>
#include <utility>

namespace loopr::loops {

template <class Work>
asio::awaitable<std::invoke_result_t<Work&>> offload(asio::thread_pool& pool, Work& work) {
  using Value = std::invoke_result_t<Work&>;
  std::optional<Value> result;
  co_await asio::co_spawn(
      pool.get_executor(),
      [&]() -> asio::awaitable<void> {
        result.emplace(work());
        co_return;
      },
      asio::use_awaitable);
  co_return std::move(*result);
}

}  // namespace loopr::loops
