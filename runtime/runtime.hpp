#pragma once
// The runtime in one include: a run's configuration, the shards (the data path), the engine
// (Trainer, Task) and the built-in tasks with their `train` functions.

#include <halo/runtime/config.hpp>
#include <halo/runtime/data/shard.hpp>
#include <halo/runtime/engine/checkpoint.hpp>
#include <halo/runtime/engine/trainer.hpp>
#include <halo/runtime/tasks/hetero/hetero_classification.hpp>
#include <halo/runtime/tasks/link/link_prediction.hpp>
#include <halo/runtime/tasks/node/node_classification.hpp>
