// SPDX-License-Identifier: GPL-3.0-or-later
// Llama (Llama 2 / 3 / 3.1 / 3.2, TinyLlama, SmolLM2 and every folder that says model_type llama):
// RMSNorm, rotary positions (llama3 scaling among the variants), grouped-query attention, SwiGLU.
// LlamaConfig's defaults: untied, rope_theta 10,000, rms_norm_eps 1e-6, 2,048 positions, no biases.
#include "family.h"

namespace attnviz::families {

namespace {

Status readLlama(const ConfigFields &c, Architecture &a) { return readLlamaLike(c, a, LlamaDefaults{}); }

} // namespace

const Family kLlama{"llama", {"llama"}, readLlama, llamaNames};

} // namespace attnviz::families
