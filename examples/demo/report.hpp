// SPDX-License-Identifier: BSL-1.0
//
// What a night produced, and how the demo prints it: a summary per run, the relay's lag as a
// text chart, the dead-letter queue, and the side-by-side report.
#pragma once

#include "scenario.hpp"

#include <letterbox/outbox/relay_counters.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace demo {

struct lag_sample {
    double t = 0;      // seconds since the load started
    double lag_ms = 0; // age of the oldest unpublished event
    std::size_t pending = 0;
};

/// Something that happened at `t`: `D` the broker became unreachable, `U` it came back, `X`
/// the enrollment service's process died, `L` a confirm was lost.
struct marker {
    double t = 0;
    char symbol = '?';
};

/// One message of a dead-letter queue, as the report shows it.
struct dead_letter_line {
    std::string queue;
    std::int64_t enrollment = 0;
    std::string reason;
    std::string exception_type;
    std::string exception_message;
    std::uint32_t attempts = 0;
};

/// What one downstream service ended up with.
struct consumer_outcome {
    std::string id;
    std::string effect;
    std::size_t with_effect = 0;       // enrollments with at least one effect row
    std::size_t lost = 0;              // committed, no effect, and not in a dead-letter queue
    std::size_t duplicate_effects = 0; // effect rows beyond the first, summed over enrollments
    std::size_t absorbed = 0;          // duplicate deliveries the inbox skipped
    std::size_t in_dlq = 0;            // enrollments in its dead-letter queue
    std::size_t dropped = 0;           // naive: failed deliveries rejected into nowhere
    std::uint64_t delivered = 0;
    std::uint64_t redelivered = 0;
};

struct run_result {
    bool letterbox = false;
    double seconds = 0;
    std::size_t committed = 0;     // rows in the enrollment service's database
    std::size_t confirmed = 0;     // 201 answers the students saw
    std::size_t no_answer = 0;     // connections dropped by a dying process
    std::size_t other_answers = 0; // anything else (should be 0)
    std::size_t publish_failures = 0;
    std::size_t crashes = 0;
    letterbox::relay_counters relay{};
    std::uint64_t link_stored = 0;
    std::uint64_t confirms_lost = 0;
    std::vector<consumer_outcome> consumers;
    std::vector<std::int64_t> access_denied;
    std::vector<dead_letter_line> dead_letters;
    std::vector<lag_sample> lag;
    std::vector<marker> markers;

    std::size_t lost() const;
    std::size_t duplicate_effects() const;
    std::size_t absorbed() const;
};

void print_plan(const fault_plan& plan);
void print_night(const run_result& r);
void print_lag_chart(const run_result& r);
void print_dead_letters(const run_result& r);
void print_side_by_side(const run_result& naive, const run_result& reliable);

} // namespace demo
