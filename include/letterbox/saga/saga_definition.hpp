// SPDX-License-Identifier: BSL-1.0
#pragma once

#include <letterbox/config.hpp>
#include <letterbox/error.hpp>
#include <letterbox/saga/saga_step.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace letterbox::inline LETTERBOX_ABI_NAMESPACE {

/// What an orchestrated saga does: its name and its steps, in order (Eventuate's
/// `step().invokeParticipant().withCompensation()`, written as data plus handlers). The saga
/// runs the steps one after the other; when one fails or times out, it runs the compensations
/// of the steps that succeeded, in reverse order, and ends `failed`. When every step succeeds
/// it ends `completed`. `saga_orchestrator` runs it.
///
/// Example:
///
///     auto fulfilment = letterbox::saga_definition<order>("order-fulfilment")
///         .step({.name = "reserve-stock",
///                .invoke = [](const order& o) { return saga_command(reserve{o.id}, "stock"); },
///                .compensate = [](const order& o) { return saga_command(release{o.id}, "stock");
///                }, .timeout = 30s})
///         .step({.name = "charge-payment",
///                .invoke = [](const order& o) { return saga_command(charge{o.id}, "payments"); },
///                .timeout = 30s});
template <class Data>
class saga_definition {
public:
    /// A saga named `name`, the `saga_type` of its instances. Throws `letterbox::error`
    /// (`errc::invalid_argument`) for an empty name.
    explicit saga_definition(std::string name)
        : name_(std::move(name)) {
        if (name_.empty())
            throw error(errc::invalid_argument, "a saga needs a name");
    }

    /// Appends `step`. Throws `letterbox::error` (`errc::invalid_argument`) when its name is
    /// empty, taken by an earlier step or by a final state (`completed`, `failed`,
    /// `compensation_failed`), or starts with `compensating:`; or when it has no `invoke`.
    saga_definition& step(saga_step<Data> step) & {
        check(step);
        steps_.push_back(std::move(step));
        return *this;
    }
    saga_definition&& step(saga_step<Data> step) && {
        return std::move(this->step(std::move(step)));
    }

    const std::string& name() const noexcept { return name_; }
    const std::vector<saga_step<Data>>& steps() const noexcept { return steps_; }

private:
    void check(const saga_step<Data>& step) const {
        const std::string_view name = step.name;
        const auto reserved = name == "completed" || name == "failed" ||
                              name == "compensation_failed" || name.starts_with("compensating:");
        if (name.empty() || reserved)
            throw error(errc::invalid_argument, "saga '" + name_ +
                                                    "': a step needs a name "
                                                    "that is not a saga state");
        for (const auto& s : steps_)
            if (s.name == name)
                throw error(errc::invalid_argument,
                            "saga '" + name_ + "': two steps are named '" + s.name + "'");
        if (!step.invoke)
            throw error(errc::invalid_argument,
                        "saga '" + name_ + "': step '" + step.name + "' has no command");
    }

    std::string name_;
    std::vector<saga_step<Data>> steps_;
};

} // namespace letterbox
