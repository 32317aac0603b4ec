// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>

#include <boost/system/error_code.hpp>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// The error type that every asynchronous operation of letterbox completes with, first, as in
/// Asio and Beast: `void(error_code)` or `void(error_code, T)`. So `asio::use_awaitable` and
/// `asio::use_future` throw `boost::system::system_error` on failure, and `asio::as_tuple` or
/// `asio::redirect_error` hand the code over instead.
///
/// It holds letterbox's own codes (`errc`, whose category is `error_category()`) as they are:
/// it compares equal to `errc` values, to the `condition`s and to the `std::error_code` it was
/// made from, and converts back to that `std::error_code` unchanged. A handler may therefore take
/// `std::error_code` instead. A cancelled operation completes with
/// `boost::asio::error::operation_aborted`, which compares equal to
/// `std::errc::operation_canceled`.
using error_code = boost::system::error_code;

} // namespace letterbox::inline LETTERBOX_ABI_NAMESPACE
