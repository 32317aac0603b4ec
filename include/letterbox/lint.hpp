// SPDX-License-Identifier: BSL-1.0
#pragma once

/// The topology lint (docs/topology-lint.md): `lint::check_topology` over a
/// `lint::broker_topology` (what the code declares, or a RabbitMQ definitions export read by
/// `lint::parse_definitions`), its rules (`lint::rules`) and its reports.
#include <letterbox/lint/broker_topology.hpp>
#include <letterbox/lint/check_topology.hpp>
#include <letterbox/lint/consumer_settings.hpp>
#include <letterbox/lint/effective_arguments.hpp>
#include <letterbox/lint/finding.hpp>
#include <letterbox/lint/parse_definitions.hpp>
#include <letterbox/lint/policy.hpp>
#include <letterbox/lint/report.hpp>
#include <letterbox/lint/rule.hpp>
#include <letterbox/lint/rules.hpp>
#include <letterbox/lint/severity.hpp>
