// SPDX-License-Identifier: BSL-1.0
// check_saga_history on written histories: each saga invariant (S-01 to S-04) holds on a
// correct history and is reported, with the events it rests on, on one that breaks it.
#include <letterbox/testing/check_saga_history.hpp>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace unit_testing_check_saga_history {

namespace {

namespace lt = letterbox::testing;
using kind = lt::saga_history_event::kind;
using namespace std::chrono_literals;

const lt::saga_expectations two_steps{
    .steps = {"reserve", "charge"}, .without_compensation = {}, .step_timeout = 100ms};

/// A history written one event at a time, each 10 ms after the last unless told.
struct script {
    std::vector<lt::saga_history_event> h;
    std::chrono::milliseconds now{0};

    std::size_t add(lt::saga_history_event e, std::chrono::milliseconds after = 10ms) {
        now += after;
        e.at = now;
        h.push_back(std::move(e));
        return h.size() - 1;
    }
    std::size_t move(std::string from, std::string to, std::string cause,
                     std::chrono::milliseconds after = 10ms) {
        return add({.what = kind::moved,
                    .saga = "order-1",
                    .step = {},
                    .from = std::move(from),
                    .to = std::move(to),
                    .cause = std::move(cause)},
                   after);
    }
    std::size_t effect(kind what, std::string step) {
        return add({.what = what, .saga = "order-1", .step = std::move(step)});
    }
};

/// A saga whose charge is declined: reserve done, charge declined, reserve undone, failed.
script declined_charge() {
    script s;
    s.move("", "reserve", "start");
    s.effect(kind::applied, "reserve");
    s.move("reserve", "charge", "reply reserve invoke success");
    s.effect(kind::declined, "charge");
    s.move("charge", "compensating:reserve", "reply charge invoke failure");
    s.effect(kind::undone, "reserve");
    s.move("compensating:reserve", "failed", "reply reserve compensate success");
    return s;
}

std::vector<lt::saga_violation> check(const script& s, const lt::saga_expectations& e = two_steps) {
    return lt::check_saga_history(s.h, e);
}

} // namespace

TEST_CASE("check_saga_history: a completed saga and a compensated one keep every invariant",
          "[testing][saga]") {
    script done;
    done.move("", "reserve", "start");
    done.effect(kind::applied, "reserve");
    done.move("reserve", "charge", "reply reserve invoke success");
    done.effect(kind::applied, "charge");
    done.move("charge", "completed", "reply charge invoke success");
    CHECK(check(done).empty());
    CHECK(check(declined_charge()).empty());

    // A step that timed out, then happened late, is undone first; then the one before it.
    script late;
    late.move("", "reserve", "start");
    late.effect(kind::applied, "reserve");
    late.move("reserve", "charge", "reply reserve invoke success");
    late.move("charge", "compensating:charge", "timeout step", 100ms);
    late.effect(kind::applied, "charge");
    late.effect(kind::undone, "charge");
    late.move("compensating:charge", "compensating:reserve", "reply charge compensate success");
    late.effect(kind::undone, "reserve");
    late.move("compensating:reserve", "failed", "reply reserve compensate success");
    CHECK(check(late).empty());
}

TEST_CASE("check_saga_history: S-01 reports a failed saga with a step done and never undone",
          "[testing][saga]") {
    script s;
    s.move("", "reserve", "start");
    const auto reserved = s.effect(kind::applied, "reserve");
    s.move("reserve", "failed", "timeout step", 100ms);
    const auto failed = s.h.size() - 1;
    const auto v = check(s);
    REQUIRE(v.size() == 1);
    CHECK(v[0].which == lt::saga_invariant::outcome);
    CHECK(v[0].saga == "order-1");
    CHECK(v[0].events == std::vector<std::size_t>{reserved, failed});
    CHECK_THAT(v[0].explanation,
               Catch::Contains("step 'reserve', which happened, was never compensated"));
    CHECK(lt::to_string(v[0]).starts_with("S-01 outcome: saga order-1 failed"));
}

TEST_CASE("check_saga_history: S-01 reports a step undone twice, and undone out of order",
          "[testing][saga]") {
    auto twice = declined_charge();
    twice.effect(kind::undone, "reserve");
    auto v = check(twice);
    REQUIRE(v.size() == 1);
    CHECK(v[0].which == lt::saga_invariant::outcome);
    CHECK_THAT(v[0].explanation, Catch::Contains("compensated 2 times"));

    script order;
    order.move("", "reserve", "start");
    order.effect(kind::applied, "reserve");
    order.move("reserve", "charge", "reply reserve invoke success");
    order.effect(kind::applied, "charge");
    order.move("charge", "compensating:charge", "timeout step", 100ms);
    const auto first = order.effect(kind::undone, "reserve");
    const auto second = order.effect(kind::undone, "charge");
    order.move("compensating:charge", "failed", "reply charge compensate success");
    v = check(order);
    REQUIRE(v.size() == 1);
    CHECK_THAT(v[0].explanation, Catch::Contains("not compensated in reverse order"));
    CHECK(v[0].events == std::vector<std::size_t>{first, second});
}

TEST_CASE("check_saga_history: S-01 reports a saga that did not end, or completed without a "
          "step, or completed with a step undone",
          "[testing][saga]") {
    script stuck;
    stuck.move("", "reserve", "start");
    auto v = check(stuck);
    REQUIRE(v.size() == 1);
    CHECK_THAT(v[0].explanation, Catch::Contains("ended in 'reserve', neither completed nor"));

    script skipped;
    skipped.move("", "reserve", "start");
    skipped.effect(kind::applied, "reserve");
    skipped.move("reserve", "completed", "reply reserve invoke success");
    v = check(skipped);
    REQUIRE(v.size() == 1);
    CHECK_THAT(v[0].explanation, Catch::Contains("step 'charge' never happened"));

    script undone;
    undone.move("", "reserve", "start");
    undone.effect(kind::applied, "reserve");
    undone.effect(kind::undone, "reserve");
    undone.move("reserve", "charge", "reply reserve invoke success");
    undone.effect(kind::applied, "charge");
    undone.move("charge", "completed", "reply charge invoke success");
    v = check(undone);
    REQUIRE(v.size() == 1);
    CHECK_THAT(v[0].explanation, Catch::Contains("completed, but step 'reserve' was undone"));

    // A step without a compensation stays done in a failed saga.
    script kept;
    kept.move("", "reserve", "start");
    kept.effect(kind::applied, "reserve");
    kept.move("reserve", "failed", "timeout step", 100ms);
    CHECK(check(kept, {.steps = {"reserve", "charge"},
                       .without_compensation = {"reserve"},
                       .step_timeout = 100ms})
              .empty());
}

TEST_CASE("check_saga_history: S-02 reports a step undone that never happened", "[testing][saga]") {
    script s;
    s.move("", "reserve", "start");
    s.effect(kind::declined, "reserve");
    const auto phantom = s.effect(kind::undone, "reserve");
    s.move("reserve", "failed", "reply reserve invoke failure");
    const auto v = check(s);
    REQUIRE(v.size() == 1);
    CHECK(v[0].which == lt::saga_invariant::no_phantom_compensation);
    CHECK(v[0].events == std::vector<std::size_t>{phantom});
    CHECK_THAT(v[0].explanation, Catch::Contains("step 'reserve' was undone, but it had not"));
}

TEST_CASE("check_saga_history: S-03 reports a step that happened twice", "[testing][saga]") {
    script s;
    s.move("", "reserve", "start");
    const auto first = s.effect(kind::applied, "reserve");
    const auto second = s.effect(kind::applied, "reserve");
    s.move("reserve", "charge", "reply reserve invoke success");
    s.effect(kind::applied, "charge");
    s.move("charge", "completed", "reply charge invoke success");
    const auto v = check(s);
    REQUIRE(v.size() == 1);
    CHECK(v[0].which == lt::saga_invariant::no_duplicate_step);
    CHECK(v[0].events == std::vector<std::size_t>{first, second});
    CHECK_THAT(v[0].explanation, Catch::Contains("happened 2 times"));
}

TEST_CASE("check_saga_history: S-04 reports a timeout that fires early, for a compensation's "
          "state, or after a reply ended its state",
          "[testing][saga]") {
    script early;
    early.move("", "reserve", "start");
    early.move("reserve", "failed", "timeout step", 99ms);
    auto v = check(early);
    REQUIRE(v.size() == 1);
    CHECK(v[0].which == lt::saga_invariant::no_stray_timeout);
    CHECK_THAT(v[0].explanation, Catch::Contains("fired before it was due"));

    auto wrong_phase = declined_charge();
    wrong_phase.h.pop_back(); // still compensating the reservation
    wrong_phase.move("compensating:reserve", "failed", "timeout step", 100ms);
    v = check(wrong_phase);
    REQUIRE_FALSE(v.empty());
    CHECK(v[0].which == lt::saga_invariant::no_stray_timeout);
    CHECK_THAT(v[0].explanation, Catch::Contains("a state that timeout does not belong to"));

    // A compensation's timeout in a step's state, and one that fires early.
    script misplaced;
    misplaced.move("", "reserve", "start");
    misplaced.move("reserve", "failed", "timeout compensation", 100ms);
    v = check(misplaced);
    REQUIRE_FALSE(v.empty());
    CHECK_THAT(v[0].explanation, Catch::Contains("a compensation timeout moved it from 'reserve'"));
    auto hasty = declined_charge();
    hasty.h.resize(5); // still compensating the reservation
    hasty.move("compensating:reserve", "compensating:reserve", "timeout compensation", 50ms);
    v = check(hasty);
    REQUIRE_FALSE(v.empty());
    CHECK_THAT(v[0].explanation, Catch::Contains("fired before it was due"));

    script after_reply;
    after_reply.move("", "reserve", "start");
    after_reply.effect(kind::applied, "reserve");
    const auto replied = after_reply.move("reserve", "charge", "reply reserve invoke success");
    const auto stray = after_reply.move("reserve", "failed", "timeout step", 100ms);
    v = check(after_reply);
    REQUIRE_FALSE(v.empty());
    CHECK(v[0].which == lt::saga_invariant::no_stray_timeout);
    CHECK(v[0].events == std::vector<std::size_t>{replied, stray});
}

TEST_CASE("check_saga_history: a compensation that fails, times out and is sent again keeps "
          "every invariant",
          "[testing][saga]") {
    auto s = declined_charge();
    s.h.resize(5); // compensating the reservation; its reply not yet in
    s.move("compensating:reserve", "compensating:reserve", "reply reserve compensate failure");
    s.move("compensating:reserve", "compensating:reserve", "timeout retry", 1000ms);
    s.move("compensating:reserve", "compensating:reserve", "timeout compensation", 100ms);
    s.move("compensating:reserve", "compensating:reserve", "timeout retry", 2000ms);
    s.effect(kind::undone, "reserve");
    s.move("compensating:reserve", "failed", "reply reserve compensate success");
    CHECK(check(s).empty());
}

TEST_CASE("check_saga_history: events of a saga the history does not show starting, and "
          "faults, are not judged",
          "[testing][saga]") {
    script s;
    s.add({.what = kind::undone, .saga = "order-9", .step = "reserve"});
    s.add({.what = kind::fault, .cause = "every connection drops"});
    CHECK(check(s).empty());
    CHECK(lt::to_string(s.h[1]) == "20.000ms fault every connection drops");
    CHECK(lt::to_string(declined_charge().h[2]) ==
          "30.000ms saga order-1 moved reserve -> charge (reply reserve invoke success)");
}

} // namespace unit_testing_check_saga_history
