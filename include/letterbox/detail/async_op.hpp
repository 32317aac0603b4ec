// SPDX-License-Identifier: BSL-1.0
#pragma once

// The one base of letterbox's asynchronous operations (after Beast's async_base): what every
// `async_*` function does between its initiation and its completion, written once.
//
//     return detail::async_start<void(std::error_code)>(
//         token, owner_executor, [state](detail::async_op<void(std::error_code)> op) {
//             // runs on owner_executor
//             op.on_cancel([](auto cancelled) { cancelled(errc::outcome_unknown); });
//             state->publish(msg, op);
//         });
//
// `async_start`:
// - posts the start function to the owner's executor (a strand, or an executor whose handlers
//   never run concurrently), allocating with the handler's associated allocator (the
//   operation's state too; with the default allocator, from Asio's recycling allocator);
// - holds a work guard on the handler's associated executor while the operation is pending, so
//   that its `io_context::run()` does not return before the completion (unless the operation
//   is `outstanding_work::untracked`, below);
// - completes on the handler's associated executor (the owner's executor by default), posted,
//   never inside the initiating call, once: a later completion is ignored, so a cancellation and
//   the normal completion may race on the owner's executor;
// - wires the handler's associated cancellation slot, if it is connected:
//   - a signal that arrives before the start function has run cancels the operation before it
//     does anything (`total` cancellation): it completes with `operation_canceled` and default
//     values, and the start function never runs. Every operation supports this;
//   - a signal that arrives while the operation waits (for a confirm, a timer, a broker) calls
//     what the operation registered with `on_cancel`, on the owner's executor, if its type is
//     one the operation accepts (`terminal` by default). An operation that registered nothing
//     completes normally.
//   The slot is cleared before the handler runs, as Asio requires.

#include <letterbox/config.hpp>
#include <letterbox/detail/unique_function.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_allocator.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/recycling_allocator.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::detail {

/// The code a cancelled operation completes with, as the error type of its signature.
template <class ErrorCode>
ErrorCode cancelled_code() {
    if constexpr (std::is_same_v<ErrorCode, boost::system::error_code>)
        return boost::asio::error::operation_aborted;
    else
        return std::make_error_code(std::errc::operation_canceled);
}

/// Whether a pending operation counts as outstanding work on its handler's executor (so that
/// `io_context::run()` waits for it). Tracked, as in Asio, unless what completes the operation
/// is driven by the program rather than by the executor: a `virtual_clock` that the program
/// advances, a broker outage that the program ends, a relay that runs until stopped.
enum class outstanding_work { tracked, untracked };

template <class Signature>
class async_op_state;
template <class Signature>
class async_op;

/// A nullary function object whose associated allocator is `Alloc`, by a nested
/// `allocator_type`. Unlike `bind_allocator`'s wrapper it does not specialise
/// `associated_executor`, so `post` needs no work dispatcher for it (a second, type-erased
/// executor, tracked, to dispatch it on where it already runs).
template <class Alloc, class F>
class allocated_function {
public:
    using allocator_type = Alloc;

    allocated_function(const Alloc& alloc, F&& f)
        : alloc_(alloc)
        , f_(std::move(f)) {}

    allocator_type get_allocator() const noexcept { return alloc_; }

    void operator()() { std::move(f_)(); }

private:
    Alloc alloc_;
    F f_;
};

/// `boost::asio::post(ex, bind_allocator(alloc, f))`, in the same queue and the same order,
/// without its overheads: no work dispatcher (see `allocated_function`), and, for an
/// `any_io_executor` that wraps an `io_context`'s executor (what a broker or a transport built
/// on an `io_context` holds), a post to that executor itself rather than through the
/// type-erased wrapper (whose `require` and `prefer` each build another wrapper, and whose
/// `execute` allocates the function once more).
template <class Executor, class Alloc, class F>
void post_with_allocator(const Executor& ex, const Alloc& alloc, F&& f) {
    using function = allocated_function<Alloc, std::decay_t<F>>;
    if constexpr (std::is_same_v<Executor, boost::asio::any_io_executor>) {
        using io_executor = boost::asio::io_context::executor_type;
        if (const auto* io = ex.template target<io_executor>()) {
            boost::asio::post(*io, function(alloc, std::forward<F>(f)));
            return;
        }
    }
    boost::asio::post(ex, function(alloc, std::forward<F>(f)));
}

/// The allocator of an operation's state: the handler's associated allocator, or, for the
/// default one, Asio's recycling allocator (a per-thread cache of the blocks its own operations
/// use, so a steady stream of operations does not call `malloc` for each).
template <class Handler>
auto op_state_allocator(const Handler& handler) {
    auto alloc = boost::asio::get_associated_allocator(handler);
    if constexpr (std::is_same_v<decltype(alloc), std::allocator<void>>)
        return boost::asio::recycling_allocator<void>();
    else
        return alloc;
}

/// The type-erased state of one pending operation; `async_op` is a handle to it.
template <class ErrorCode, class... Values>
class async_op_state<void(ErrorCode, Values...)> {
public:
    async_op_state() = default;
    async_op_state(const async_op_state&) = delete;
    async_op_state& operator=(const async_op_state&) = delete;
    virtual ~async_op_state() = default;

    /// Completes the operation, the first time only; `then` runs on the owner's executor after
    /// the handler has run.
    void complete(unique_function<void()> then, ErrorCode ec, Values... values) {
        if (done_)
            return;
        done_ = true;
        on_cancel_ = nullptr;
        do_complete(std::move(then), std::move(ec), std::move(values)...);
    }

    bool done() const noexcept { return done_; }

    /// Called on the owner's executor, after the start function, with the operation itself
    /// (what `on_cancel` registered does not hold it: no cycle keeps an abandoned one alive).
    /// The hook runs once: it is taken out first, since it usually completes the operation,
    /// which would otherwise destroy it while it runs.
    void cancel(boost::asio::cancellation_type type, async_op<void(ErrorCode, Values...)> self) {
        if (done_ || !on_cancel_ || (type & accepted_) == boost::asio::cancellation_type::none)
            return;
        auto hook = std::move(on_cancel_);
        on_cancel_ = nullptr;
        hook(std::move(self));
    }

    void set_on_cancel(unique_function<void(async_op<void(ErrorCode, Values...)>)> f,
                       boost::asio::cancellation_type accepted) {
        on_cancel_ = std::move(f);
        accepted_ = accepted;
    }

    /// Set by the slot handler, in whatever thread emits the signal; read by the start.
    bool cancelled_before_start() const noexcept {
        return requested_.load(std::memory_order_acquire);
    }
    void request_cancel() noexcept { requested_.store(true, std::memory_order_release); }

protected:
    virtual void do_complete(unique_function<void()> then, ErrorCode ec, Values... values) = 0;

private:
    bool done_ = false;
    std::atomic<bool> requested_{false};
    unique_function<void(async_op<void(ErrorCode, Values...)>)> on_cancel_;
    boost::asio::cancellation_type accepted_ = boost::asio::cancellation_type::none;
};

/// A pending asynchronous operation, as its start function sees it: a copyable callable with the
/// operation's signature that completes it (once), and the place to say what cancelling it does.
template <class Signature>
class async_op;

template <class ErrorCode, class... Values>
class async_op<void(ErrorCode, Values...)> {
public:
    using state_type = async_op_state<void(ErrorCode, Values...)>;

    explicit async_op(std::shared_ptr<state_type> state) noexcept
        : state_(std::move(state)) {}

    /// Completes the operation with these results (ignored when it already completed).
    void operator()(ErrorCode ec, Values... values) const {
        state_->complete(nullptr, std::move(ec), std::move(values)...);
    }

    /// Completes the operation, then runs `then` on the owner's executor once the handler has
    /// run (a consumer's deliveries start after its `async_consume` completion, for instance).
    void complete_then(unique_function<void()> then, ErrorCode ec, Values... values) const {
        state_->complete(std::move(then), std::move(ec), std::move(values)...);
    }

    /// Completes the operation as cancelled: `operation_canceled` and default values.
    void cancelled() const { (*this)(cancelled_code<ErrorCode>(), Values{}...); }

    /// What a cancellation does while the operation waits: `f(op)` runs on the owner's
    /// executor, only while the operation is pending, with this operation as `op` (so `f` need
    /// not, and should not, hold it). Only a signal of a type in `accepted` does it (Asio's
    /// meanings): `terminal` by default, for an operation that may leave what it waited for
    /// undecided (a publish's confirm); add `partial` when what it did is known and reported,
    /// and `total` when cancelling leaves no trace (a timer's wait).
    template <class F>
    void on_cancel(F f, boost::asio::cancellation_type accepted =
                            boost::asio::cancellation_type::terminal) const {
        state_->set_on_cancel(std::move(f), accepted);
    }

    bool done() const noexcept { return state_->done(); }

private:
    std::shared_ptr<state_type> state_;
};

template <class Owner, class Signature>
class owned_async_op_state;

/// The part of an operation's state that knows its owner but not its handler: the cancellation
/// wiring and the posting of the start function. Written once per owner type and signature, not
/// once per completion handler, since every distinct handler type instantiates what depends on
/// it again (that is most of what letterbox's operations cost a program at compile time).
template <class Owner, class ErrorCode, class... Values>
class owned_async_op_state<Owner, void(ErrorCode, Values...)>
    : public async_op_state<void(ErrorCode, Values...)>,
      public std::enable_shared_from_this<owned_async_op_state<Owner, void(ErrorCode, Values...)>> {
public:
    using signature = void(ErrorCode, Values...);

    explicit owned_async_op_state(const Owner& owner)
        : owner_(owner) {}

    const Owner& owner() const noexcept { return owner_; }

    /// Installs the slot handler, in the initiating thread (the handler's).
    template <class Slot>
    void wire_cancellation(Slot slot) {
        if (!slot.is_connected())
            return;
        slot.template emplace<slot_handler>(slot_handler{this->weak_from_this(), owner_});
    }

    /// Posts the start function (held by the concrete state, `run_start`) to the owner, or
    /// completes the operation as cancelled there if a signal came first. What is posted names
    /// neither the start nor the handler: a start written inside an `async_*` function template
    /// has a type of its own for every completion token, and so would what posts it.
    template <class Allocator>
    void post_start(const Allocator& alloc) {
        post_with_allocator(owner_, alloc, [self = this->shared_from_this()]() mutable {
            if (self->cancelled_before_start())
                return async_op<signature>(std::move(self)).cancelled();
            // `self` keeps the state alive until the start function has returned and been
            // destroyed, even if it completed the operation and let go of `op`.
            self->run_start(async_op<signature>(self));
        });
    }

protected:
    /// Runs the start function, once, and then destroys it; the caller keeps the state alive
    /// meanwhile.
    virtual void run_start(async_op<signature> op) = 0;

private:
    struct slot_handler {
        std::weak_ptr<owned_async_op_state> op;
        Owner owner;
        void operator()(boost::asio::cancellation_type type) {
            if (auto self = op.lock()) {
                self->request_cancel();
                boost::asio::post(owner, [op = op, type] {
                    if (auto s = op.lock())
                        s->cancel(type, async_op<signature>(s));
                });
            }
        }
    };

    Owner owner_;
};

/// The start function of an operation started by `async_start_here`: it ran in the call.
struct started_in_call {
    template <class Op>
    void operator()(Op&&) const {}
};

template <class Handler, class Owner, class IoExecutor, class Signature>
class async_op_completion;

/// The part of the concrete state that needs the handler: holding it, its work guard, and its
/// completion. Typed on the handler and the signature, not on the start function: the start is a
/// lambda of its own in every `async_*` function, and so would be everything here, once per
/// operation, where a coroutine's handler type is one per signature.
template <class Handler, class Owner, class IoExecutor, class ErrorCode, class... Values>
class async_op_completion<Handler, Owner, IoExecutor, void(ErrorCode, Values...)>
    : public owned_async_op_state<Owner, void(ErrorCode, Values...)> {
public:
    using handler_executor = boost::asio::associated_executor_t<Handler, IoExecutor>;
    using work_type = std::decay_t<decltype(boost::asio::prefer(
        std::declval<handler_executor>(), boost::asio::execution::outstanding_work.tracked))>;

    async_op_completion(Handler handler, const Owner& owner, const IoExecutor& io,
                        outstanding_work work)
        : owned_async_op_state<Owner, void(ErrorCode, Values...)>(owner)
        , handler_(std::move(handler))
        , io_(io) {
        if (work == outstanding_work::tracked)
            work_.emplace(tracked_work(boost::asio::get_associated_executor(*handler_, io_)));
    }

private:
    // `prefer(ex, outstanding_work.tracked)`; for an `any_io_executor` that wraps an
    // `io_context`'s executor, asked of that executor directly (the same work, the same type)
    // rather than through the type-erased wrapper.
    static work_type tracked_work(const handler_executor& ex) {
        if constexpr (std::is_same_v<handler_executor, boost::asio::any_io_executor>) {
            using io_executor = boost::asio::io_context::executor_type;
            if (const auto* io = ex.template target<io_executor>())
                return work_type(
                    boost::asio::prefer(*io, boost::asio::execution::outstanding_work.tracked));
        }
        return boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked);
    }

    void do_complete(unique_function<void()> then, ErrorCode ec, Values... values) final {
        auto alloc = boost::asio::get_associated_allocator(*handler_);
        auto ex = boost::asio::get_associated_executor(*handler_, io_);
        auto work = std::move(work_); // released once the handler has run
        work_.reset();
        // Only an operation with something to run after its handler pays for a copy of the
        // owner's executor in its completion.
        if (then)
            then = [owner = this->owner(), then = std::move(then)]() mutable {
                boost::asio::dispatch(owner, std::move(then));
            };
        post_with_allocator(
            ex, alloc,
            [h = std::move(*handler_), work = std::move(work), then = std::move(then),
             results = std::make_tuple(std::move(ec), std::move(values)...)]() mutable {
                boost::asio::get_associated_cancellation_slot(h).clear();
                std::apply(std::move(h), std::move(results));
                if (then)
                    then();
            });
        handler_.reset();
    }

    std::optional<Handler> handler_;
    IoExecutor io_;
    std::optional<work_type> work_;
};

/// The concrete state: `Owner` is where the operation's work and its cancellation run (the
/// owner's strand); `IoExecutor` the executor a handler without one of its own completes on.
/// Only the start function is here; the handler's part is `async_op_completion`.
template <class Handler, class Owner, class IoExecutor, class Signature, class Start>
class async_op_impl final : public async_op_completion<Handler, Owner, IoExecutor, Signature> {
public:
    // The start function is made in place from `start`.
    template <class... S>
    async_op_impl(Handler handler, const Owner& owner, const IoExecutor& io, outstanding_work work,
                  S&&... start)
        : async_op_completion<Handler, Owner, IoExecutor, Signature>(std::move(handler), owner, io,
                                                                     work)
        , start_(std::in_place, std::forward<S>(start)...) {}

private:
    // The start runs where it is stored (not moved out first: a publish's start holds the
    // message), and is released once it has run.
    void run_start(async_op<Signature> op) override {
        (*start_)(std::move(op));
        start_.reset();
    }

    std::optional<Start> start_;
};

/// Makes the state of an operation whose handler is `handler`, with its cancellation wired; the
/// result is typed on the owner and the signature only.
/// The start function is a `Start` made in place from `start`.
template <class Signature, class Start, class Owner, class IoExecutor, class Handler,
          class... StartArgs>
std::shared_ptr<owned_async_op_state<Owner, Signature>>
make_async_op_with(Handler handler, const Owner& owner, const IoExecutor& io, outstanding_work work,
                   StartArgs&&... start) {
    using impl = async_op_impl<Handler, Owner, IoExecutor, Signature, Start>;
    auto alloc = op_state_allocator(handler);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    std::shared_ptr<owned_async_op_state<Owner, Signature>> state = std::allocate_shared<impl>(
        alloc, std::move(handler), owner, io, work, std::forward<StartArgs>(start)...);
    state->wire_cancellation(std::move(slot));
    return state;
}

template <class Signature, class Owner, class IoExecutor, class Handler, class Start>
std::shared_ptr<owned_async_op_state<Owner, Signature>>
make_async_op(Handler handler, const Owner& owner, const IoExecutor& io, outstanding_work work,
              Start&& start) {
    return make_async_op_with<Signature, std::decay_t<Start>>(std::move(handler), owner, io, work,
                                                              std::forward<Start>(start));
}

/// The start function of `async_start_taking`: `f(std::move(arg), op)`.
template <class F, class Arg>
class start_taking {
public:
    template <class G, class A>
    start_taking(G&& f, A&& arg)
        : f_(std::forward<G>(f))
        , arg_(std::forward<A>(arg)) {}

    template <class Op>
    void operator()(Op&& op) {
        f_(std::move(arg_), std::forward<Op>(op));
    }

private:
    F f_;
    Arg arg_;
};

/// Initiates an operation of an object that lives on `owner` (see the top of this file):
/// `start(async_op<Signature>)` runs on `owner`, unless the operation was cancelled first; a
/// handler without an associated executor completes on `io` (the object's `get_executor()`).
/// The start function is forwarded, not copied, to the operation's state (a publish's holds
/// its message).
template <class Signature, outstanding_work Work = outstanding_work::tracked, class Token,
          class Owner, class IoExecutor, class Start>
auto async_start(Token&& token, const Owner& owner, const IoExecutor& io, Start&& start) {
    return boost::asio::async_initiate<Token, Signature>(
        [owner, io](auto handler, auto&& start) {
            auto alloc = boost::asio::get_associated_allocator(handler);
            make_async_op<Signature>(std::move(handler), owner, io, Work,
                                     std::forward<decltype(start)>(start))
                ->post_start(alloc);
        },
        token, std::forward<Start>(start));
}

/// `async_start` whose start function takes `arg` over: `start(std::move(arg), op)` runs on
/// `owner`. `arg` is moved once, into the operation's state (a closure that captured it would
/// be moved there after it): for what is worth not moving twice, a publish's message.
template <class Signature, outstanding_work Work = outstanding_work::tracked, class Token,
          class Owner, class IoExecutor, class Start, class Arg>
auto async_start_taking(Token&& token, const Owner& owner, const IoExecutor& io, Start&& start,
                        Arg&& arg) {
    return boost::asio::async_initiate<Token, Signature>(
        [owner, io](auto handler, auto&& start, auto&& arg) {
            using start_type =
                start_taking<std::decay_t<decltype(start)>, std::decay_t<decltype(arg)>>;
            auto alloc = boost::asio::get_associated_allocator(handler);
            make_async_op_with<Signature, start_type>(std::move(handler), owner, io, Work,
                                                      std::forward<decltype(start)>(start),
                                                      std::forward<decltype(arg)>(arg))
                ->post_start(alloc);
        },
        token, std::forward<Start>(start), std::forward<Arg>(arg));
}

/// `async_start` for an object whose strand and executor are one.
template <class Signature, outstanding_work Work = outstanding_work::tracked, class Token,
          class Executor, class Start>
auto async_start(Token&& token, const Executor& owner, Start&& start) {
    return async_start<Signature, Work>(std::forward<Token>(token), owner, owner,
                                        std::forward<Start>(start));
}

/// What a cancellation does to an operation of `async_start_with` that registered no `on_cancel`
/// of its own: nothing (it completes normally), or complete it at once with `operation_canceled`
/// (the work it asked for, of a broker say, may still be carried out; its reply is ignored).
enum class unregistered_cancel { ignored, completes_cancelled };

/// `async_start` for an object whose state lives behind `state`, on `owner`: `op(*state, done)`
/// runs there. The state is held until then, so the object may go away meanwhile.
template <class Signature, unregistered_cancel Cancel = unregistered_cancel::ignored, class Token,
          class Owner, class IoExecutor, class State, class Op>
auto async_start_with(Token&& token, const Owner& owner, const IoExecutor& io,
                      std::shared_ptr<State> state, Op&& op) {
    return async_start<Signature>(
        std::forward<Token>(token), owner, io,
        [state = std::move(state), op = std::forward<Op>(op)](async_op<Signature> done) mutable {
            if constexpr (Cancel == unregistered_cancel::completes_cancelled)
                done.on_cancel([](auto cancelled) { cancelled.cancelled(); });
            op(*state, std::move(done));
        });
}

/// Like `async_start`, but `start` runs inside the initiating call, in the caller's thread: for
/// an object that is not shared between threads and whose operations take effect at once, as
/// an Asio timer's wait is registered by `async_wait` itself. The completion is still posted.
template <class Signature, outstanding_work Work = outstanding_work::tracked, class Token,
          class Executor, class Start>
auto async_start_here(Token&& token, const Executor& owner, Start&& start) {
    return boost::asio::async_initiate<Token, Signature>(
        [owner](auto handler, auto&& start) {
            start(async_op<Signature>(make_async_op<Signature>(std::move(handler), owner, owner,
                                                               Work, started_in_call{})));
        },
        token, std::forward<Start>(start));
}

} // namespace letterbox::detail
