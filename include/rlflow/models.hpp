#pragma once
/// \file
/// Umbrella header of the model zoo: the Builder, every model family and the registry.

#include <rlflow/models/bert.hpp>
#include <rlflow/models/builder.hpp>
#include <rlflow/models/inception.hpp>
#include <rlflow/models/nasnet.hpp>
#include <rlflow/models/nasrnn.hpp>
#include <rlflow/models/resnet.hpp>
#include <rlflow/models/squeezenet.hpp>
#include <rlflow/models/vit.hpp>
#include <rlflow/models/zoo.hpp>
