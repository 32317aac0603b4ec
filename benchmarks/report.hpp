// SPDX-License-Identifier: BSL-1.0
//
// What every benchmark prints besides its table (issue 19): the machine's load when it started
// and when it ended, and for each figure the median of its rounds with their spread. A run on
// a loaded machine says so: its figures are not to be set beside a quiet run's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace bench {

/// The median of `v`; 0 when it is empty (a row that did not run).
inline double median(std::vector<double> v) {
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const auto k = v.size() / 2;
    return v.size() % 2 != 0 ? v[k] : (v[k - 1] + v[k]) / 2;
}

/// The rounds of one figure: their median, and how far the slowest and the fastest round lie
/// from it, in percent.
struct rounds {
    std::vector<double> values;

    void add(double x) { values.push_back(x); }
    double mid() const { return median(values); }
    /// "±x%": the larger distance from the median to the lowest or highest round.
    std::string spread() const {
        const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
        const double m = mid();
        const double worst = m > 0 ? std::max(m - *lo, *hi - m) / m * 100 : 0;
        char text[32];
        std::snprintf(text, sizeof text, "±%.0f%%", worst);
        return text;
    }
};

/// The one-minute load average (/proc/loadavg), or NaN where there is none.
inline double load_average() {
    std::ifstream in("/proc/loadavg");
    double one = NAN;
    if (!(in >> one))
        return NAN;
    return one;
}

/// The machine's load over a run: read at the start, and again by `end()`.
class machine_load {
public:
    machine_load()
        : start_(load_average()) {}

    /// Prints the load at the start and now, and says when the machine was loaded: a load
    /// average above its number of cores at either end (another build, another benchmark: the
    /// benchmark then waited for a core). A broker on the same machine counts toward the load,
    /// and stays below that on its own.
    void end() const {
        const double now = load_average();
        const unsigned cores = std::max(1U, std::thread::hardware_concurrency());
        std::printf("machine: %u cores, load average %.2f at the start, %.2f at the end\n", cores,
                    start_, now);
        if (std::max(start_, now) > cores)
            std::printf("LOADED MACHINE: the load average exceeded the number of cores; do not "
                        "compare these figures with a quiet run's\n");
    }

private:
    double start_;
};

} // namespace bench
