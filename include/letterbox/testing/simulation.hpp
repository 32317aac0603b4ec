// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/testing/seed.hpp>
#include <letterbox/transport/in_memory/broker.hpp>
#include <letterbox/virtual_clock.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE::testing {

/// Runs the handlers of the single-threaded `io` that are ready now, one at a time, without
/// moving time (at most `max_steps`).
inline void run_ready(boost::asio::io_context& io, std::size_t max_steps = 5'000'000) {
    io.restart();
    for (std::size_t i = 0; i < max_steps && io.poll_one() != 0; ++i) {
    }
}

/// Drives `io` on the calling thread: runs ready handlers one at a time and, when none is
/// ready, moves `clock` to its next timer. Returns true as soon as `done()` holds; false when
/// nothing is left to run and `done()` still does not hold, or after `max_steps` handlers and
/// jumps (a bound against livelock).
inline bool drive_until(boost::asio::io_context& io, virtual_clock& clock,
                        const std::function<bool()>& done, std::size_t max_steps = 5'000'000) {
    for (std::size_t step = 0; step < max_steps; ++step) {
        if (done())
            return true;
        io.restart();
        if (io.poll_one() == 0 && !clock.advance_to_next())
            return done();
    }
    return done();
}

/// Runs what falls due in the next `d` of virtual time on `io`, then leaves `clock` at exactly
/// `now + d`.
inline void run_for(boost::asio::io_context& io, virtual_clock& clock, std::chrono::nanoseconds d) {
    const auto end = clock.now() + d;
    for (std::size_t step = 0; step < 5'000'000; ++step) {
        run_ready(io);
        const auto next = clock.next_deadline();
        if (!next || *next > end)
            break;
        clock.advance_to(*next);
    }
    clock.advance_to(end);
    run_ready(io);
}

/// A deterministic world to run a pipeline in: one single-threaded `io_context`, a
/// `virtual_clock`, an in-memory broker on both, and a root seed from which every subsystem
/// derives its own (REPRO-01..04).
///
/// - **One thread, one order.** Handlers run one at a time, in the order Asio queues them;
///   timers fire in deadline order (ties in creation order). Nothing reads the real clock, so
///   the same seed gives the same run, event for event.
/// - **Time jumps.** When nothing is runnable, `drive_until` and `run_for` move the clock to
///   the next timer at once: a five-minute retry delay costs no real time.
/// - **Seeded choices.** `rng("faults")`, `rng("workload")`, ... give independent generators,
///   seeded with `derive_seed(seed(), name)`: adding a subsystem never shifts another's stream.
///   `after(delay, f)` and `at(t, f)` schedule work on the virtual clock; a scenario draws its
///   times from those generators (the seeded scheduler).
///
/// The seed is printed by letterbox's test main as `LETTERBOX_SEED=`; a runner that uses one
/// simulation per seed (`check_pipeline`) prints each failing seed instead.
///
/// Thread safety: none; everything runs on the thread that drives it.
///
/// Example:
///
///     letterbox::testing::simulation sim(42);
///     letterbox::in_memory::transport t(sim.broker(), "app");
///     bool fired = false;
///     sim.after(std::chrono::minutes(5), [&] { fired = true; });
///     sim.drive_until([&] { return fired; }); // returns at once in real time
class simulation {
public:
    using clock_type = virtual_clock;
    using time_point = virtual_clock::time_point;

    explicit simulation(std::uint64_t root_seed, in_memory::broker_options broker = {})
        : seed_(root_seed)
        , broker_(io_.get_executor(), clock_, std::move(broker)) {}

    simulation(const simulation&) = delete;
    simulation& operator=(const simulation&) = delete;

    /// The root seed.
    std::uint64_t seed() const noexcept { return seed_; }
    /// The seed of one subsystem: `derive_seed(seed(), subsystem)`.
    std::uint64_t derive(std::string_view subsystem) const noexcept {
        return derive_seed(seed_, subsystem);
    }
    /// A generator for one subsystem, seeded with `derive(subsystem)`.
    std::mt19937_64 rng(std::string_view subsystem) const {
        return std::mt19937_64(derive(subsystem));
    }

    boost::asio::io_context& io() noexcept { return io_; }
    boost::asio::any_io_executor executor() { return io_.get_executor(); }
    virtual_clock& clock() noexcept { return clock_; }
    in_memory::broker& broker() noexcept { return broker_; }
    /// Virtual time since the start of the run.
    std::chrono::nanoseconds elapsed() const noexcept { return clock_.now().time_since_epoch(); }

    /// Runs `f` on the simulation's thread once virtual time reaches `t`.
    void at(time_point t, std::function<void()> f) {
        // The simulation owns its timers (a handler owning its timer would be destroyed by the
        // clock it is registered with, while the clock is being destroyed).
        auto& timer = *timers_.emplace_back(
            std::make_unique<virtual_clock::timer_type<>>(clock_.make_timer(executor())));
        timer.expires_at(t);
        timer.async_wait([f = std::move(f)](boost::system::error_code ec) {
            if (!ec)
                f();
        });
    }
    /// Runs `f` once `delay` of virtual time has passed.
    void after(std::chrono::nanoseconds delay, std::function<void()> f) {
        at(clock_.now() + delay, std::move(f));
    }

    /// `letterbox::testing::drive_until` on this world.
    bool drive_until(const std::function<bool()>& done, std::size_t max_steps = 5'000'000) {
        return testing::drive_until(io_, clock_, done, max_steps);
    }
    /// `letterbox::testing::run_for` on this world.
    void run_for(std::chrono::nanoseconds d) { testing::run_for(io_, clock_, d); }
    /// `letterbox::testing::run_ready` on this world.
    void run_ready() { testing::run_ready(io_); }

private:
    std::uint64_t seed_;
    boost::asio::io_context io_{1};
    virtual_clock clock_;
    in_memory::broker broker_;
    std::vector<std::unique_ptr<virtual_clock::timer_type<>>> timers_;
};

} // namespace letterbox::testing
