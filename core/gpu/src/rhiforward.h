// SPDX-License-Identifier: GPL-3.0-or-later
// The QRhi side of GpuBackend, its one GPU code path: the CPU forward's named passes as compute
// shaders (core/gpu/shaders: linear and rowlinear, rownorm, rotary, attend, headavg, context,
// elementwise, topk; pooledmap for a trace's maps), recorded one dispatch each through pass() and run in one frame per forward. Two
// users:
//  - the model forward device (rhiforward.cpp): a model's weights uploaded once (BF16 / F16 kept in
//    16 bits, widened in linear.comp), the activations of the last text kept for a causal text that
//    grows;
//  - the attention op, Backend::compute() of the word-vector path (rhiattentionop.cpp): one layer's
//    projections, attention and head mean over the same passes, its weights uploaded when they change.
// Owned by, and only touched on, GpuBackend's worker thread; the QRhi is borrowed from RhiContext,
// which creates it and outlives this object.
#pragma once

#include "attnviz/attention.h"
#include "attnviz/attentiontiles.h"
#include "attnviz/device.h"
#include "weights.h"

#include <QtGui/private/qrhi_p.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace attnviz {

struct ReadItem;
struct VulkanReadback;

// The workgroups of `size` that cover n items.
inline int groups(qint64 n, int size) { return int((n + size - 1) / size); }
// A (rows, cols) mask, true where masked, as attend.comp reads it: `words` uints a row, bit j % 32 of
// word j / 32.
std::vector<quint32> maskBits(const BoolMat &mask, int words);

class RhiForward {
public:
    // `vkReadback` (Vulkan: persistent readback buffers, owned by RhiContext; null elsewhere).
    RhiForward(QRhi *rhi, std::string name, qint64 maxStorageBytes, VulkanReadback *vkReadback);
    ~RhiForward();
    RhiForward(const RhiForward &) = delete;
    RhiForward &operator=(const RhiForward &) = delete;

    // Builds the pipelines; Unavailable when a shader is missing or does not build.
    Status create();
    Status supports(const Architecture &arch, const ModelWeights<float> &weights, const ForwardInput &in) const;
    Status forward(const Architecture &arch, const std::shared_ptr<const ModelWeights<float>> &weights,
                   const ForwardInput &in, Trace<float> &out);
    // The attention op (Backend::compute): every stage of one layer, as computeAttention(); heads
    // listed in readbackHeads (all when empty) come back, the head mean where -1 is listed.
    Status attend(const AttentionConfig &config, const AttentionInput<float> &input, AttentionResult<float> &result);
    // A pooled map of one head of a trace's layer, recomputed from its q, k and log-sum-exp
    // (pooledmap.comp; rhipooledmap.cpp), as GpuBackend::pooledMap.
    Status pooledMap(const Trace<float> &trace, int layer, int head, int rowBegin, int rowEnd, int colBegin,
                     int colEnd, int outRows, int outCols, Pooling pool, Mat<float> &out);
    // Milliseconds of the last forward's or attend()'s frames (uploads, dispatches, readbacks).
    double lastGpuMs() const { return m_lastGpuMs; }
    void forgetText() { m_lastIds.clear(); }
    // Gives the GPU memory of a model whose weights are gone (the window opened another model or went
    // back to the word vectors) back: its weights and the activations of its last text.
    void releaseExpired();
    // Caps one storage buffer (bytes; 0 = the device's limit), as GpuBackend::setMaxBufferBytes.
    void setMaxBufferBytes(qint64 bytes) { m_capBytes = bytes; }
    // Rows the last forward computed (t - the reused prefix).
    int lastComputedRows() const { return m_lastRows; }

private:
    struct Buffer {
        std::unique_ptr<QRhiBuffer> buf;
        qint64 bytes = 0;
        QRhiBuffer *get() const { return buf.get(); }
    };
    // A weight: float32, BF16 or F16 words, in chunks of whole rows where it is larger than one
    // storage buffer may be (lavapipe: 128 MiB; GPT-2's 50,257 x 768 float32 unembedding is 147).
    struct Matrix {
        struct Chunk {
            Buffer b;
            int row0 = 0, rows = 0;
        };
        std::vector<Chunk> chunks;
        quint32 format = 0;
        int rows = 0, cols = 0;
    };
    struct Norm {
        Buffer gamma, beta;
        float eps = 1e-5f;
        bool hasGamma = false, hasBeta = false;
    };
    struct LayerWeightsGpu {
        Matrix q, k, v, o, gate, up, down;
        Buffer bq, bk, bv, bo, bgate, bup, bdown;
        Norm attnNorm, ffnNorm, postAttnNorm, postFfnNorm, qNorm, kNorm;
    };
    struct ModelGpu {
        const ModelWeights<float> *key = nullptr;
        qint64 limit = 0; // the storage buffer limit its weights were chunked for
        std::weak_ptr<const ModelWeights<float>> alive;
        std::vector<LayerWeightsGpu> layers;
        Norm embeddingNorm, finalNorm;
        Matrix unembedding;
        Buffer outputBias;
        qint64 bytes = 0;
    };
    // Activations of one layer, `cap` rows each (row i at i * width).
    struct LayerActs {
        Buffer attnIn, qPre, q, kPre, k, v, w, s, avg, ctx, attnOut, after, out, mlpPre, mlpPreLinear;
    };
    // A dispatch's own uniform buffer and bindings, reused from one forward to the next while the
    // buffers it binds stay the same (every dispatch of a frame is recorded before any runs).
    struct Slot {
        std::unique_ptr<QRhiBuffer> ubo;
        std::unique_ptr<QRhiShaderResourceBindings> srb;
        std::vector<QRhiBuffer *> bound;
    };
    enum class Pipe { Linear, RowNorm, Rotary, Attend, Context, HeadAvg, Elementwise, RowLinear, TopK, PooledMap, Count };
    enum class Access { Load, Store, LoadStore };
    struct Binding {
        Access access;
        QRhiBuffer *buf;
    };
    struct Dispatch {
        QRhiComputePipeline *pipe;
        QRhiShaderResourceBindings *srb;
        int x, y, z;
        int pipeIndex; // Pipe, for ATTNVIZ_GPU_PROFILE's lines
    };

    // What the host prepares for a forward: the rotary tables of the computed rows, the user's mask.
    struct HostInputs {
        std::vector<float> cosG, sinG, cosL, sinL;
        BoolMat mask;                  // effective: causal, padding, the user's cells (t, t)
        bool userMask = false;         // padding or cells
        int maskWords = 0;             // a row of maskBits
        std::vector<quint32> maskBits; // the mask as bits; empty: none beyond causality and windows
    };
    // One forward being recorded: rows [p, p + n) of t computed, activations of `cap` rows.
    struct Frame {
        int p = 0, n = 0, t = 0, cap = 0;
        QRhiResourceUpdateBatch *batch = nullptr; // the frame's uploads and uniform blocks
        bool ok = true;                           // false: a uniform buffer or bindings could not be made
    };
    struct Read {
        QRhiBuffer *buf;
        qint64 offset, bytes;
        QRhiBufferReadbackResult result;
    };
    // One layer's readbacks (null: left on the GPU).
    struct LayerReads {
        QRhiBufferReadbackResult *attnIn = nullptr, *qPre = nullptr, *q = nullptr, *kPre = nullptr, *k = nullptr,
                                 *v = nullptr, *avg = nullptr, *ctx = nullptr, *attnOut = nullptr, *after = nullptr,
                                 *out = nullptr, *mlpPre = nullptr, *mlpPreLinear = nullptr;
        std::vector<QRhiBufferReadbackResult *> w, s; // per head
    };
    struct Reads {
        std::deque<Read> all; // a deque: the results stay where the pointers below point
        std::vector<LayerReads> layers;
        // the predicted rows' logits (a top-k larger than topk.comp keeps), or their top-k
        QRhiBufferReadbackResult *final = nullptr, *input = nullptr, *logits = nullptr, *topk = nullptr;
    };

    // The attention op's buffers, kept from one call to the next while they are large enough.
    struct OpWeight {
        Matrix m;
        Buffer b;
        std::vector<float> w, bias; // the values last uploaded (skip the upload when equal)
    };
    // Heads whose (t_q, t_k) matrices share one storage buffer: buffers are limited to 2 GiB in
    // Qt 6.4 and to the device's storage-buffer range.
    struct OpHeads {
        int first = 0, count = 0;
        Buffer w, s;
    };
    struct Op {
        Buffer xq, xk, xv, q, k, v, mask, flags, ctx, out, avg;
        OpWeight wq, wk, wv, wo;
        std::vector<OpHeads> heads;
    };

    // `atLeast`: keep a buffer that is already large enough (the attention op's sizes change each call).
    bool makeBuffer(Buffer &b, qint64 bytes, bool atLeast = false);
    // The weight and bias of one of the op's projections, uploaded where they changed.
    bool opWeight(QRhiResourceUpdateBatch *batch, OpWeight &w, const Linear<float> &lin);
    // Runs the recorded dispatches in the frame begun as `cb` (a compute pass each, the first carrying
    // `batch`), brings `items` back and ends the frame; data[k] holds item k until the next frame.
    Status runFrame(QRhiCommandBuffer *cb, QRhiResourceUpdateBatch *batch, const std::vector<ReadItem> &items,
                    std::vector<QByteArray> &data);
    Status upload(const Architecture &arch, const std::shared_ptr<const ModelWeights<float>> &weights);
    Status ensureActivations(const Architecture &arch, const ModelWeights<float> &w, const ForwardInput &in, int cap);
    // Rows [0, p) the device still holds from the last text (same prefix, masks and stages).
    int reusableRows(const Architecture &arch, const ForwardInput &in) const;
    // The trace's embeddings and input (a gather on the host), rotary tables, the mask as bits.
    void prepareHost(const Architecture &arch, const ModelWeights<float> &w, const ForwardInput &in, int p,
                     Trace<float> &out, HostInputs &host) const;
    // The passes, each recording its dispatches (forward.cpp's passes of the same names).
    void product(Frame &f, QRhiBuffer *x, int in, const Matrix &W, QRhiBuffer *bias, QRhiBuffer *y, quint32 act,
                 int first, int rows, int yFirst);
    void linear(Frame &f, QRhiBuffer *x, int in, const Matrix &W, const Buffer &b, QRhiBuffer *y, quint32 act = 0);
    void rownorm(Frame &f, QRhiBuffer *x, QRhiBuffer *y, const Norm &nm, NormKind kind, qint64 rows, int width, qint64 off);
    void elementwise(Frame &f, quint32 mode, QRhiBuffer *a, QRhiBuffer *b, QRhiBuffer *y, int width, quint32 act = 0);
    void rotary(Frame &f, QRhiBuffer *q, int heads, int dHead, int half, bool local);
    // The LM head's top-k, normalizer and actual-next logit of `rows` logits rows (topk.comp).
    void topk(Frame &f, const Architecture &arch, int rows, int k);
    void attention(Frame &f, const Architecture &arch, const ForwardInput &in, const HostInputs &host, size_t layer);
    // Layer `layer` reading the residual stream x.
    void block(Frame &f, const Architecture &arch, const ForwardInput &in, const HostInputs &host, size_t layer,
               QRhiBuffer *x);
    void planReads(const Architecture &arch, const ForwardInput &in, const Frame &f, int firstPredicted, Reads &reads);
    void fillTrace(const Architecture &arch, const ModelWeights<float> &w, const ForwardInput &in, const HostInputs &host,
                   const Reads &reads, int firstPredicted, Trace<float> &out) const;
    // Records one dispatch (its uniform block, bindings, workgroups) into m_dispatches.
    bool pass(Pipe pipe, const quint32 (&u)[16], const float (&f)[8], std::initializer_list<Binding> bindings, int x,
              int y, int z, QRhiResourceUpdateBatch *batch);

    QRhi *m_rhi;
    VulkanReadback *m_vkReadback;
    std::string m_name;
    qint64 m_maxStorageBytes;
    qint64 m_capBytes = 0;
    qint64 limit() const { return m_capBytes > 0 ? std::min(m_capBytes, m_maxStorageBytes) : m_maxStorageBytes; }
    double m_lastGpuMs = 0;
    int m_lastRows = 0;

    // Released in reverse order of declaration before the QRhi (the owner destroys this object first).
    std::unique_ptr<QRhiBuffer> m_layoutUbo;
    Buffer m_dummyLoad, m_dummyLoad2, m_dummyStore, m_dummyStore2;
    std::unique_ptr<QRhiShaderResourceBindings> m_layouts[int(Pipe::Count)];
    std::unique_ptr<QRhiComputePipeline> m_pipes[int(Pipe::Count)];
    std::vector<Slot> m_slots, m_opSlots; // the model forward's dispatches, the attention op's
    std::vector<Slot> *m_slotSet = &m_slots; // the set pass() takes its slots from
    size_t m_slotsUsed = 0;
    std::vector<Dispatch> m_dispatches;

    ModelGpu m_model;
    // Activations, sized for `m_cap` rows, and what the last forward computed into them.
    int m_cap = 0;
    bool m_actsScores = false, m_actsMlp = false;
    int m_logitRows = 0;
    std::vector<LayerActs> m_layers;
    Buffer m_inputRaw, m_input, m_final, m_ffIn, m_gateOut, m_upOut, m_hidden, m_mlpOut, m_tmp, m_tmp2, m_cosG, m_sinG,
        m_cosL, m_sinL, m_mask, m_logits, m_nextIds, m_topk;
    std::vector<int> m_lastIds; // empty: nothing reusable on the device
    std::vector<int> m_lastPadded;
    std::vector<std::pair<int, int>> m_lastCells;
    Op m_op;
    // pooledMap()'s buffers, kept from one call to the next while they are large enough.
    struct MapBuffers {
        Buffer q, k, lse, edges, padded, cells, out;
    };
    MapBuffers m_map;
};

} // namespace attnviz
