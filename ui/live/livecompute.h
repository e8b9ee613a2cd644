// SPDX-License-Identifier: GPL-3.0-or-later
// One request -> one snapshot through the Model seam (core/include/attnviz/model.h). Used by the
// live worker and by the headless `attnviz export`, so that both show the same numbers.
#pragma once

#include "live/livetypes.h"
#include "live/stackcompute.h"

#include "attnviz/backend.h"
#include "attnviz/projections.h"
#include "attnviz/wordvectormodel.h"

#include <QString>

#include <cstdint>
#include <memory>

namespace attnviz::ui {

// The models the live window computes with, kept by one compute thread between requests (they
// cache random projections and seeded stack weights). A request picks one: its own model (a folder:
// File > Open model plugs in through ComputeRequest::model) or the word-vector layer / stack that
// its settings and table describe.
class LiveModels {
public:
    explicit LiveModels(Backend *backend = nullptr);
    void setBackend(Backend *backend);
    // The model for this request, set up from it; `label` gets the model's part of every title.
    Model &modelFor(const ComputeRequest &request, QString &label);
    // The trace to compute `request` into. For a model of its own it is one that model made before
    // (the last or the one before, when no snapshot holds it any more; else a copy of the last), so
    // that a causal model recomputes only from the first token that changed (model.h); otherwise new.
    // `newest` gets the last trace when the one returned is another (the one before: typing
    // alternates between the two): its rows are read for the prefix they share (TraceRequest::prefixFrom).
    std::shared_ptr<Trace<float>> traceFor(const ComputeRequest &request, std::shared_ptr<const Trace<float>> &newest);
    // The induction scores of `model` (attnviz/headroles.h's probe), measured on the first call for
    // each model and kept; null and `problem` set when the probe cannot run.
    std::shared_ptr<const Mat<double>> inductionFor(const std::shared_ptr<Model> &model, QString &problem);
    // A trace of `model` without edits kept apart from those above, for the clean model's predictions
    // and trace beside an edited one (ComputeSnapshot::cleanTrace): of the last two, one no snapshot
    // holds (a new one when both are held, or for another model), `newest` the other, whose rows it
    // may copy (TraceRequest::prefixFrom). cleanTraced(trace) after computing into it.
    std::shared_ptr<Trace<float>> cleanTraceFor(const Model &model, std::shared_ptr<const Trace<float>> &newest)
    {
        if (m_cleanOf != &model) {
            m_cleanOf = &model;
            m_cleanLast.reset();
            m_cleanPrev.reset();
        }
        if (m_cleanPrev && m_cleanPrev.use_count() == 1) { // held by no snapshot
            newest = m_cleanLast;
            return m_cleanPrev;
        }
        newest = nullptr;
        if (m_cleanLast && m_cleanLast.use_count() == 1)
            return m_cleanLast;
        newest = m_cleanLast ? m_cleanLast : m_cleanHint;
        return std::make_shared<Trace<float>>();
    }
    void cleanTraced(const std::shared_ptr<Trace<float>> &trace)
    {
        if (trace != m_cleanLast) {
            m_cleanPrev = m_cleanLast;
            m_cleanLast = trace;
        }
    }
    // A model's clean trace to copy the unedited layers from when this has traced nothing newer (a
    // speculative ablation's models: live/speculation.h); null: none.
    void setUneditedHint(std::shared_ptr<const Trace<float>> trace) { m_uneditedHint = std::move(trace); }
    const std::shared_ptr<const Trace<float>> &uneditedHint() const { return m_uneditedHint; }
    // A clean trace (ComputeSnapshot::cleanTrace) made elsewhere, read only: the clean trace beside
    // an edited one copies its rows from it when this has traced none (a speculative ablation's
    // models, whose clean trace is otherwise a whole forward of the text); null: none.
    void setCleanHint(std::shared_ptr<const Trace<float>> trace) { m_cleanHint = std::move(trace); }
    // Induction scores (or why there are none) another thread already measured for `model`, so that
    // inductionFor does not probe it again.
    void seedInduction(const std::shared_ptr<Model> &model, std::shared_ptr<const Mat<double>> scores,
                       const QString &problem)
    {
        m_inductionModel = model;
        m_induction = std::move(scores);
        m_inductionProblem = problem;
    }
    // A trace of `model` made elsewhere for a request this thread would have traced (a speculative
    // ablation the window now shows): kept as the newest, so that the next request continues it.
    void adopt(const Model *model, std::shared_ptr<Trace<float>> trace)
    {
        if (!trace || model != m_traced)
            return;
        m_traces.insert(m_traces.begin(), std::move(trace));
        if (m_traces.size() > 2)
            m_traces.pop_back();
    }
    // Lets go of the traces kept for reuse (after an allocation failed: their memory is given back;
    // a snapshot on screen keeps its own).
    void dropTraces()
    {
        m_traces.clear();
        m_traced = nullptr;
        m_cleanLast.reset();
        m_cleanPrev.reset();
        m_cleanOf = nullptr;
        m_uneditedHint.reset();
        m_cleanHint.reset();
    }

private:
    std::weak_ptr<Model> m_inductionModel;
    std::shared_ptr<const Mat<double>> m_induction;
    QString m_inductionProblem;
    WordVectorModel m_layer;
    WordStackModel m_stack;
    // The model the traces below came from, and its last two traces (newest first).
    const Model *m_traced = nullptr;
    std::vector<std::shared_ptr<Trace<float>>> m_traces;
    const Model *m_cleanOf = nullptr;
    std::shared_ptr<Trace<float>> m_cleanLast, m_cleanPrev; // the clean traces, newest first
    std::shared_ptr<const Trace<float>> m_uneditedHint, m_cleanHint;
};

// What one trace of a model may keep in the window: a quarter of the memory budget (the trace on
// screen and the next, and the views' copies), or ATTNVIZ_TRACE_BUDGET_KB (the tests make a short
// text a long one with a small budget).
uint64_t windowTraceBudget();

// The word-vector model's settings from the controls (Qt-free values for the core).
WordVectorSettings wordVectorSettings(const ComputeSettings &s);

// Why `heads` cannot be used with this d_model and projection mode, in a sentence; empty if fine.
QString headsProblem(int dModel, int heads, int dHead, ProjectionMode mode);
// What the Controls panel says about a head count that does not divide d_model (it still
// gives a view, attnviz/headslices.h); empty when it divides or an explicit d_head is used.
QString unequalHeadsNote(int dModel, int heads, int dHead, ProjectionMode mode);

// One request -> one snapshot: the request's model traces the text (through `backend` for the
// word-vector models), and the snapshot gets the labels the views need.
std::shared_ptr<ComputeSnapshot> computeSnapshot(const ComputeRequest &request, Backend &backend, LiveModels &models);

// Reads projections from JSON: {"W_q": [[...]], "b_q": [...], "W_k", "b_k", "W_v", "b_v", "W_o", "b_o"}
// in the torch.nn.Linear convention (W is (out, in)); a missing or null entry = identity / no bias.
// The same names as the case files' inputs. Errors name the file and the field.
Status loadProjectionsFile(const QString &path, Projections<float> &out);

} // namespace attnviz::ui
