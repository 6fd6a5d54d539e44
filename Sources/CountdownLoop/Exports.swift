// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 the Countdown authors (see LICENSE and NOTICE)

// The driver's API is made of the core's types (requests, events, instants, errors), so a
// package that depends on the CountdownLoop product alone gets them with `import CountdownLoop`.
@_exported import Countdown
