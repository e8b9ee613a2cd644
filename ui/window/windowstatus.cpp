// SPDX-License-Identifier: GPL-3.0-or-later
// What a snapshot says outside the views: the token chips (the pieces of the model's tokenizer,
// padding), the status bar (sizes, backend, timing, the layer, the model, a cut) and the notice above
// the chips (a text cut to the first tokens): MainWindow::showSnapshotStatus.
#include "mainwindow.h"

#include "controls/inputpanel.h"
#include "controls/tokenchipsview.h"
#include "files/messagetext.h"
#include "live/longtext.h"
#include "live/livesession.h"
#include "window/headablations.h"

#include "attnviz/gguf.h"

#include <QLabel>

#include <algorithm>

namespace attnviz::ui {

void MainWindow::showSnapshotStatus(const ComputeSnapshot &s, int layer)
{
    const QString tokenizer = m_session->model() ? QString::fromStdString(m_modelInfo.tokenizer) : QString();
    const TokenChipsView::Pieces pieces = tokenizer.startsWith(QLatin1String("byte-level"), Qt::CaseInsensitive)
        ? TokenChipsView::Pieces::ByteLevel
        : tokenizer.startsWith(QLatin1String("WordPiece"), Qt::CaseInsensitive) ? TokenChipsView::Pieces::WordPiece
                                                                               : TokenChipsView::Pieces::Words;
    if (s.encoderDecoder && s.trace) { // the sentence is the source; the target's chips are the decoder's tokens
        const auto &source = s.trace->seq2seq.sourceTokens;
        m_queryChips->setTraceTokens(source, int(source.size()), pieces);
        m_input->targetChips()->setTraceTokens(s.trace->tokens, s.totalQueryTokens, pieces);
        m_input->setDecoderText(s.target, s.targetGenerated, s.targetBeams);
    } else if (s.trace)
        m_queryChips->setTraceTokens(s.trace->tokens, s.totalQueryTokens, pieces);
    else
        m_queryChips->setTokens(s.queryLabels, s.queryUnknown, s.totalQueryTokens);
    const bool padding = s.settings.mask == MaskChoice::Padding || s.settings.mask == MaskChoice::CausalPadding;
    if (s.cross) {
        m_keyChips->setTokens(s.keyLabels, s.keyUnknown, s.totalKeyTokens);
        m_keyChips->setPadded(s.paddedKeys, padding);
        m_queryChips->setPadded({}, false);
    } else {
        m_queryChips->setPadded(s.paddedKeys, padding);
    }

    // an encoder-decoder model's sizes and layers: those of the attention the selector shows
    const AttentionKind kind = m_session->attentionKind();
    const ComputeSnapshot &v = kind == AttentionKind::Encoder && s.encoderView ? *s.encoderView
        : kind == AttentionKind::Cross && s.crossView                          ? *s.crossView
                                                                               : s;
    if (s.hasResult()) {
        m_status->setText(tr("%1%2 · %3 · d_model %4 · d_head %5 · %6: %7 · %8 ms")
                              .arg(countText(v.tq(), tr("token"), tr("tokens")))
                              .arg((v.cross ? tr(" × %1").arg(countText(v.tk(), tr("key"), tr("keys"))) : QString()) +
                                   (s.longText ? QStringLiteral(" (") + longTextPolicy() + QLatin1Char(')') : QString()))
                              .arg(countText(v.attention(layer).numHeads, tr("head"), tr("heads")))
                              .arg(v.attention(layer).dModel)
                              .arg(v.attention(layer).dHead)
                              .arg(s.backendName, s.device)
                              .arg(s.computeMs, 0, 'f', s.computeMs < 10 ? 2 : 1));
        if (v.deep())
            m_status->setText(m_status->text() + tr(" · layer %1 of %2").arg(v.layerIndex(layer)).arg(v.numLayers()));
        if (s.encoderDecoder)
            m_status->setText(m_status->text() + tr(" · source %1 · %2")
                                                     .arg(countText(qint64(s.trace->seq2seq.sourceTokens.size()), tr("token"), tr("tokens")))
                                                     .arg(attentionKindDescription(m_session->attentionKind())));
        if (m_session->model()) {
            m_status->setText(m_status->text() + tr(" · model %1").arg(shownText(s.modelLabel, 200)));
            // a quantized file: what the attention shown is (core/include/attnviz/gguf.h)
            if (const std::string note = quantizedModelNote(m_modelInfo.dtype); !note.empty())
                m_status->setText(m_status->text() + QStringLiteral(" · ") + QString::fromStdString(note));
        }
    } else {
        m_status->setText(shownText(s.message, 160));
    }
    if (s.hasResult() && s.trace->cut() && !s.trace->cutReason.empty())
        m_status->setText(m_status->text() + tr(" · cut at %L1 of %L2 tokens: %3")
                                                 .arg(s.tq())
                                                 .arg(s.totalQueryTokens)
                                                 .arg(QString::fromStdString(s.trace->cutReason)));
    if (s.hasResult() && !s.edits.empty())
        m_status->setText(m_status->text() + (s.editsShownClean ? tr(" · clean model (ablations kept: %1)")
                                                                : tr(" · edited: %1"))
                                                 .arg(describeAblations(s.edits)));
    QStringList notices;
    if (const QString edits = HeadAblations::notice(s); !edits.isEmpty())
        notices << edits;
    if (s.trace && s.trace->cut() && !s.trace->cutReason.empty())
        notices << tr("%L1 tokens: the views show the first %L2 (%3).")
                       .arg(std::max(s.totalQueryTokens, s.totalKeyTokens))
                       .arg(s.tq())
                       .arg(QString::fromStdString(s.trace->cutReason));
    else if (s.truncated())
        notices << tr("%L1 tokens pasted: the views show the first %L2 (%3).")
                       .arg(std::max(s.totalQueryTokens, s.totalKeyTokens))
                       .arg(s.tq())
                       .arg(s.cutReason());
    if (!notices.isEmpty()) {
        m_notice->setText(notices.join(QLatin1Char('\n')));
        m_notice->setVisible(true);
    } else if (!m_notice->text().contains(QChar::ReplacementCharacter)) {
        m_notice->setVisible(false);
    }
}

} // namespace attnviz::ui
