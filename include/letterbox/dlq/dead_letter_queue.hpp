// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/concepts/transport.hpp>
#include <letterbox/config.hpp>
#include <letterbox/dlq/dead_letter_entry.hpp>
#include <letterbox/dlq/dead_letter_filter.hpp>
#include <letterbox/dlq/dead_letter_queue_options.hpp>
#include <letterbox/dlq/page.hpp>
#include <letterbox/dlq/replay_result.hpp>

#include <memory>
#include <ostream>
#include <string>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::dlq {

/// Operations over one dead-letter queue: browse, replay, purge, export and depth, through a
/// Transport that can read queues on demand. What the CLI and the HTTP endpoint call.
///
/// Every operation except `async_depth` is a *scan*: it gets messages one at a time with
/// manual acknowledgement, at most as many as were ready at its first get (the get's message
/// count, or a depth when the transport's gets carry none) and at most
/// `dead_letter_queue_options::max_messages`, so it always ends. A message the operation does
/// not remove is held unacknowledged until the end and then nacked with requeue, which puts it
/// back in its original position: browsing and exporting leave the queue's content *and
/// order* unchanged (on classic queues; see docs/dead-letter-operations.md for quorum
/// queues). The cost: every message scanned is delivered and requeued once (it comes back
/// marked redelivered), and held messages count as unacknowledged, not ready, while the scan
/// runs.
///
/// Each operation completes on its token's associated executor (by default the transport's)
/// with an error and a result. On an error the result holds what was done before it; what
/// was held has gone back to the queue (by the nack, or because the channel that held it
/// closed).
///
/// - `async_browse(filter, page, tok)`: `void(error_code, std::vector<dead_letter_entry>)`,
///   the matching entries in queue order, `page.offset` matches skipped and at most
///   `page.limit` returned. It stops fetching once the page is full: `page.limit` entries, or
///   bodies adding up to `page.max_bytes` or more.
/// - `async_replay(filter, tok)`: `void(error_code, replay_result)`. Each matching message
///   in turn is republished to its original exchange and routing key with the same message id
///   and its failure bookkeeping reset (see docs/dead-letter-operations.md), and only once that
///   publish is confirmed and routed is the dead-lettered original acknowledged (removed). A
///   publish that fails (`errc::no_route` for an unroutable original, a nack, a missing
///   exchange) counts as failed and the original goes back to the queue; a connection-level
///   failure also stops the replay with that error. One message at a time: simple, ordered,
///   and never more than one copy in doubt. Interrupted at any point, a replay loses nothing:
///   at worst a message is both republished and still in the queue (a duplicate, which the
///   consumer's inbox absorbs). To replay chosen messages, set `filter.ids`.
/// - `async_purge(filter, tok)`: `void(error_code, std::size_t removed)`: acknowledges the
///   matching messages (they are gone for good) and gives back the others.
/// - `async_export(filter, out, tok)`: `void(error_code, std::size_t written)`: writes
///   one JSON object per matching message and line (`dead_letter_entry::to_json`) and removes
///   nothing. A failing stream completes with `std::errc::io_error`.
/// - `async_depth(tok)`: `void(error_code, std::uint32_t ready)`.
///
/// Run one scan at a time per queue: a concurrent scan, or a consumer on the dead-letter
/// queue, sees the messages another scan holds as missing.
///
/// Cancellation (the token's cancellation slot): a scan supports `terminal` and `partial`
/// (what it did is reported). The step under way
/// finishes (a get, or a replay's publish and acknowledgement: never half a replay), nothing
/// more is fetched, what the scan holds goes back to the queue, and it completes with
/// `std::errc::operation_canceled` and the result of what it did. `async_depth` is the
/// transport's `async_queue_depth` and cancels as that does.
///
/// Lifetime: the transport, and `out` for an export, must outlive the operations; the
/// `dead_letter_queue` object need not (operations keep what they need).
///
/// Thread safety: as the transport's; the operations run on its executor.
///
/// @tparam Transport a model of `queue_reader`.
///
/// Example:
///
///     letterbox::dlq::dead_letter_queue dlq(transport, "orders.dlq");
///     letterbox::dlq::dead_letter_filter f;
///     f.exception_type = "payment_declined";
///     dlq.async_replay(f, [](std::error_code ec, letterbox::dlq::replay_result r) {
///         // r.replayed went back to their original queues; r.failed stayed.
///     });
template <queue_reader Transport>
class dead_letter_queue {
public:
    using executor_type = typename Transport::executor_type;

    /// Operations on `queue` through `transport`. Throws `letterbox::error`
    /// (`errc::invalid_argument`) when `options.max_messages` is 0.
    dead_letter_queue(Transport& transport, std::string queue,
                      dead_letter_queue_options options = {});

    executor_type get_executor() const;
    const std::string& queue() const noexcept { return queue_; }
    const dead_letter_queue_options& options() const noexcept { return *options_; }

    template <class Token>
    auto async_browse(dead_letter_filter filter, page p, Token&& token);

    template <class Token>
    auto async_replay(dead_letter_filter filter, Token&& token);

    template <class Token>
    auto async_purge(dead_letter_filter filter, Token&& token);

    template <class Token>
    auto async_export(dead_letter_filter filter, std::ostream& out, Token&& token);

    template <class Token>
    auto async_depth(Token&& token);

private:
    Transport* transport_;
    std::string queue_;
    std::shared_ptr<const dead_letter_queue_options> options_;
};

} // namespace letterbox::dlq

#include <letterbox/dlq/impl/dead_letter_queue.hpp>
