// SPDX-License-Identifier: BSL-1.0
//
// Properties (issue 22) of an event-sourced bank account over the in-memory stores, on the
// virtual clock, for random command sequences: deposits, withdrawals (an overdraft is refused,
// so never appended), pairs of writers racing from one loaded version, projection steps of two
// projections (balances per account, daily totals), and projection runners dying at the two
// projection failpoints and restarting. After the run:
//
// - the balance at any random time equals a full replay of the events recorded up to then;
// - loading with snapshots equals loading without, at the head and at every version;
// - each projection equals a rebuild from position 0, and both equal what the events say;
// - no event is lost or applied twice by a projection, whatever the crashes;
// - of two writers racing from one version, exactly one commits, and no balance goes negative.
//
// Randomness comes only from RapidCheck, seeded with LETTERBOX_SEED by the shared test main.
// Replay: LETTERBOX_SEED=<n> ./letterbox_property_tests "[event_sourcing]", or the
// RC_PARAMS="reproduce=..." line RapidCheck prints.

#include <letterbox/event_sourcing/aggregate_repository.hpp>
#include <letterbox/event_sourcing/in_memory_checkpoint_store.hpp>
#include <letterbox/event_sourcing/in_memory_event_store.hpp>
#include <letterbox/event_sourcing/in_memory_snapshot_store.hpp>
#include <letterbox/event_sourcing/projection_runner.hpp>
#include <letterbox/failpoint.hpp>
#include <letterbox/in_memory_unit_of_work.hpp>
#include <letterbox/virtual_clock.hpp>

#include "support/check_property.hpp"

#include <boost/asio/io_context.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace property_event_sourcing {

namespace {

namespace lb = letterbox;
using namespace std::chrono_literals;

struct account {
    std::int64_t balance = 0;
    std::uint64_t movements = 0;
    friend bool operator==(const account&, const account&) = default;
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(account, balance, movements)

std::int64_t amount_of(const lb::recorded_event& e) {
    return nlohmann::json::parse(e.data).at("amount").get<std::int64_t>();
}

struct account_fold {
    using state_type = account;
    static constexpr std::uint32_t fold_version = 1;
    void apply(account& a, const lb::recorded_event& e) const {
        a.balance += e.type == "deposited" ? amount_of(e) : -amount_of(e);
        ++a.movements;
    }
};

using repository =
    lb::aggregate_repository<account_fold, lb::in_memory_event_store, lb::in_memory_snapshot_store>;

/// A read model of sums by key, written through the unit of work; counts each event it saw.
class sums {
public:
    using unit_of_work_type = lb::in_memory_unit_of_work;
    using rule =
        std::function<void(std::map<std::string, std::int64_t>&, const lb::recorded_event&)>;

    explicit sums(rule r)
        : rule_(std::move(r)) {}

    lb::in_memory_unit_of_work begin() { return {}; }
    std::error_code apply(lb::in_memory_unit_of_work& u, const lb::recorded_event& e) {
        return u.stage(core_, "e", nullptr, [this, e] {
            rule_(values_, e);
            ++seen_[e.position];
        });
    }
    std::error_code reset(lb::in_memory_unit_of_work& u) {
        return u.stage(core_, "reset", nullptr, [this] {
            values_.clear();
            seen_.clear();
        });
    }

    std::map<std::string, std::int64_t> values_;
    std::map<std::uint64_t, int> seen_; // by position

private:
    rule rule_;
    lb::detail::in_memory_participant core_;
};

void by_account(std::map<std::string, std::int64_t>& m, const lb::recorded_event& e) {
    m[e.stream] += e.type == "deposited" ? amount_of(e) : -amount_of(e);
}

void by_day(std::map<std::string, std::int64_t>& m, const lb::recorded_event& e) {
    const auto day =
        std::chrono::floor<std::chrono::days>(e.recorded_at).time_since_epoch().count();
    m[std::to_string(day) + "/" + e.type] += amount_of(e);
}

using runner_type = lb::projection_runner<lb::in_memory_event_store, lb::in_memory_checkpoint_store,
                                          sums, lb::virtual_clock>;

enum class op { deposit, withdraw, race, project, crash };

struct command {
    op what = op::deposit;
    int account = 0; // 0..2
    std::int64_t amount = 1;
    int advance_min = 0;       // minutes the clock moves first
    int projection = 0;        // 0: balances, 1: daily totals
    bool after_commit = false; // crash: after the commit, else before it
};

struct plan {
    std::vector<command> commands;
    std::uint64_t snapshot_every = 3;
    std::size_t batch = 2;
    std::vector<int> probes; // minutes after the start: times at which to load and compare
};

rc::Gen<command> command_gen() {
    return rc::gen::build<command>(
        rc::gen::set(&command::what, rc::gen::weightedElement<op>({{5, op::deposit},
                                                                   {4, op::withdraw},
                                                                   {1, op::race},
                                                                   {3, op::project},
                                                                   {1, op::crash}})),
        rc::gen::set(&command::account, rc::gen::inRange(0, 3)),
        rc::gen::set(&command::amount, rc::gen::inRange<std::int64_t>(1, 120)),
        rc::gen::set(&command::advance_min,
                     rc::gen::weightedElement<int>({{6, 0}, {3, 7}, {1, 600}})),
        rc::gen::set(&command::projection, rc::gen::inRange(0, 2)),
        rc::gen::set(&command::after_commit, rc::gen::arbitrary<bool>()));
}

rc::Gen<plan> plan_gen() {
    return rc::gen::build<plan>(
        rc::gen::set(&plan::commands, rc::gen::container<std::vector<command>>(command_gen())),
        rc::gen::set(&plan::snapshot_every, rc::gen::inRange<std::uint64_t>(1, 8)),
        rc::gen::set(&plan::batch, rc::gen::inRange<std::size_t>(1, 5)),
        rc::gen::set(&plan::probes,
                     rc::gen::container<std::vector<int>>(4, rc::gen::inRange(-10, 3000))));
}

struct world {
    boost::asio::io_context io;
    lb::virtual_clock clock;
    lb::in_memory_event_store events;
    lb::in_memory_snapshot_store snapshots;
    lb::in_memory_checkpoint_store checkpoints;
    lb::message_id_generator ids{7};
    std::array<sums, 2> models{sums(by_account), sums(by_day)};
    std::array<std::unique_ptr<runner_type>, 2> runners;
    std::array<std::optional<lb::failpoint>, 2> crash_at; // armed crash of each runner
    std::size_t batch = 2;

    std::unique_ptr<runner_type> start(int i) {
        lb::projection_options o{.name = i == 0 ? "balances" : "daily", .batch = batch};
        o.failpoint = [this, i](lb::failpoint p, const lb::message_id&) {
            if (crash_at[i] != p)
                return false;
            crash_at[i].reset();
            return true;
        };
        return std::make_unique<runner_type>(io.get_executor(), events, checkpoints, models[i],
                                             clock, std::move(o));
    }

    // One step of projection `i`; a crash replaces its runner with a new one, as a restart.
    void step(int i) {
        std::error_code ec;
        try {
            runners[i]->step(ec);
        } catch (const lb::failpoint_halt&) {
            runners[i] = start(i);
        }
        RC_ASSERT(!ec);
    }

    lb::event_data movement(const char* type, std::int64_t amount) {
        lb::event_data e;
        e.id = ids();
        e.type = type;
        e.data = nlohmann::json{{"amount", amount}}.dump();
        return e;
    }
};

std::string account_name(int i) {
    return "account-" + std::to_string(i);
}

void run(const plan& p) {
    if constexpr (!lb::failpoints_enabled)
        RC_DISCARD("the property needs LETTERBOX_FAILPOINTS");
    world w;
    w.batch = p.batch;
    w.runners = {w.start(0), w.start(1)};
    repository accounts(w.events, w.snapshots,
                        {.snapshot_every = p.snapshot_every, .read_batch = 4});
    const auto start = w.clock.wall_now();
    std::size_t races = 0;

    // Loads, decides and appends; says whether the append committed (a refused overdraft
    // appends nothing).
    const auto move = [&](const std::string& stream, op what, std::int64_t amount) {
        std::error_code ec;
        const auto a = accounts.load(stream, ec);
        RC_ASSERT(!ec);
        if (what == op::withdraw && a.state.balance < amount)
            return false;
        const std::vector<lb::event_data> e{
            w.movement(what == op::deposit ? "deposited" : "withdrawn", amount)};
        lb::append_result r;
        auto u = w.events.begin();
        RC_ASSERT(!accounts.append(u, a, e, w.clock.wall_now(), r));
        RC_ASSERT(!u.commit());
        return true;
    };

    for (const auto& c : p.commands) {
        w.clock.advance(std::chrono::minutes(c.advance_min));
        const auto stream = account_name(c.account);
        switch (c.what) {
        case op::deposit:
        case op::withdraw:
            move(stream, c.what, c.amount);
            break;
        case op::race: {
            // Two writers load one version; both append; only one may commit.
            std::error_code ec;
            const auto a = accounts.load(stream, ec);
            const auto b = accounts.load(stream, ec);
            RC_ASSERT(!ec);
            const std::vector<lb::event_data> ea{w.movement("deposited", c.amount)};
            const std::vector<lb::event_data> eb{w.movement("deposited", c.amount + 1)};
            lb::append_result ra, rb;
            auto ua = w.events.begin();
            auto ub = w.events.begin();
            const auto sa = accounts.append(ua, a, ea, w.clock.wall_now(), ra);
            const auto sb = accounts.append(ub, b, eb, w.clock.wall_now(), rb);
            const bool a_won = !sa && !ua.commit();
            const bool b_won = !sb && !ub.commit();
            RC_ASSERT(a_won != b_won);
            ++races;
            break;
        }
        case op::project:
            w.step(c.projection);
            break;
        case op::crash:
            w.crash_at[c.projection] = c.after_commit
                                           ? lb::failpoint::after_projection_commit_before_wake
                                           : lb::failpoint::after_projection_apply_before_commit;
            w.step(c.projection);
            break;
        }
    }
    RC_TAG(races > 0 ? "races" : "no race");

    std::error_code ec;
    const auto all = w.events.read_all(0, 1'000'000, ec);
    RC_ASSERT(!ec);

    // What the events say, computed here from scratch.
    std::array<std::map<std::string, std::int64_t>, 2> expected;
    for (const auto& e : all) {
        by_account(expected[0], e);
        by_day(expected[1], e);
    }
    for (const auto& [stream, balance] : expected[0])
        RC_ASSERT(balance >= 0); // refused overdrafts were never appended

    // Loading with snapshots equals loading without, at the head and at every version; and
    // the balance at any time equals a replay of the events recorded up to then.
    lb::in_memory_snapshot_store no_snapshots;
    repository replaying(w.events, no_snapshots);
    for (int i = 0; i < 3; ++i) {
        const auto stream = account_name(i);
        const auto head = accounts.load(stream, ec);
        RC_ASSERT(!ec);
        RC_ASSERT(head.state == replaying.load(stream, ec).state);
        const auto known = expected[0].find(stream);
        RC_ASSERT(head.state.balance == (known == expected[0].end() ? 0 : known->second));
        for (std::uint64_t v = 0; v <= head.version; ++v)
            RC_ASSERT(accounts.load_at_version(stream, v, ec).state ==
                      replaying.load_at_version(stream, v, ec).state);
        for (const auto minutes : p.probes) {
            const auto t = start + std::chrono::minutes(minutes);
            account replay;
            for (const auto& e : all)
                if (e.stream == stream && e.recorded_at <= t)
                    account_fold{}.apply(replay, e);
            RC_ASSERT(accounts.load_at_time(stream, t, ec).state == replay);
            RC_ASSERT(!ec);
        }
    }

    // Each projection, caught up, equals the events, and a rebuild from zero; nothing lost or
    // applied twice whatever the crashes.
    for (int i = 0; i < 2; ++i) {
        w.crash_at[i].reset();
        w.runners[i]->catch_up(ec);
        RC_ASSERT(!ec);
        RC_ASSERT(w.models[i].values_ == expected[i]);
        RC_ASSERT(w.models[i].seen_.size() == all.size());
        for (const auto& [position, times] : w.models[i].seen_)
            RC_ASSERT(times == 1);
        const auto live = w.models[i].values_;
        RC_ASSERT(!w.runners[i]->reset());
        w.runners[i]->catch_up(ec);
        RC_ASSERT(!ec);
        RC_ASSERT(w.models[i].values_ == live);
    }
}

} // namespace

} // namespace property_event_sourcing

namespace rc {
template <>
struct Arbitrary<property_event_sourcing::plan> {
    static Gen<property_event_sourcing::plan> arbitrary() {
        return property_event_sourcing::plan_gen();
    }
};
} // namespace rc

namespace property_event_sourcing {

TEST_CASE("property: an event-sourced account agrees with its replays, its snapshots and its "
          "projections, under races and crashes",
          "[property][event_sourcing]") {
    test_support::check_property("event-sourced account", 150, [](const plan& p) { run(p); });
}

} // namespace property_event_sourcing
