// SPDX-License-Identifier: GPL-3.0-or-later
#include "controls/stackcontrols.h"
#include "controls/formwidgets.h"

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardItemModel>


namespace attnviz::ui {

StackControls::StackControls(QWidget *parent) : QGroupBox(tr("Transformer stack"), parent)
{
    setObjectName(QStringLiteral("stackControls"));
    auto *f = new QFormLayout(this);
    m_depth = new QSpinBox(this);
    m_depth->setObjectName(QStringLiteral("depthSpin"));
    m_depth->setRange(1, kMaxDepth);
    m_depth->setSpecialValueText(tr("1 (single attention layer)"));
    m_depth->setToolTip(tr("1: the single attention layer. 2 or more: that many transformer blocks (attention, "
                           "residual, LayerNorm, feed-forward 4·d, residual, LayerNorm), every layer kept."));
    f->addRow(tr("Depth"), m_depth);
    m_layer = new QSpinBox(this);
    m_layer->setObjectName(QStringLiteral("layerSpin"));
    m_layer->setRange(0, 0);
    m_layer->setToolTip(tr("The layer whose attention the Weights, All heads, Contextual embeddings and Selected "
                           "query views show (or click a thumbnail in Layers × heads)."));
    f->addRow(tr("Show layer"), m_layer);
    m_norm = combo(this, "blockNormCombo",
                   {{tr("post-norm (seed 002: LN(x + attn(x)))"), int(NormPlacement::Post)},
                    {tr("pre-norm (GPT-2: x + attn(LN(x)))"), int(NormPlacement::Pre)}});
    f->addRow(tr("Block"), m_norm);
    m_activation = combo(this, "activationCombo",
                         {{tr("ReLU"), int(Activation::Relu)},
                          {tr("GELU"), int(Activation::GeluErf)},
                          {tr("GELU (tanh, GPT-2)"), int(Activation::GeluTanh)}});
    f->addRow(tr("Feed-forward"), m_activation);
    m_positions = combo(this, "positionsCombo",
                        {{tr("none"), int(PositionEncoding::None)},
                         {tr("sinusoidal"), int(PositionEncoding::Sinusoidal)},
                         {tr("learned (seeded table, or the file's wpe)"), int(PositionEncoding::Learned)}});
    f->addRow(tr("Positions"), m_positions);
    m_source = combo(this, "stackSourceCombo",
                     {{tr("seeded (nn.Linear init)"), int(StackWeightsSource::Seeded)},
                      {tr("loaded from file"), int(StackWeightsSource::File)}});
    f->addRow(tr("Weights"), m_source);
    m_seed = new QSpinBox(this);
    m_seed->setObjectName(QStringLiteral("stackSeedSpin"));
    m_seed->setRange(0, 1 << 30);
    m_seed->setPrefix(tr("seed "));
    f->addRow(tr("Seed"), m_seed);
    m_load = new QPushButton(tr("Load weights…"), this);
    m_load->setObjectName(QStringLiteral("loadStackWeightsButton"));
    m_load->setToolTip(tr("A .safetensors file with GPT-2 tensor names (h.{i}.attn.c_attn.weight, …)."));
    f->addRow(m_load);
    m_sourceLabel = note(this);
    m_sourceLabel->setObjectName(QStringLiteral("stackSourceLabel"));
    f->addRow(m_sourceLabel);
    m_note = note(this);
    m_note->setObjectName(QStringLiteral("stackNote"));
    f->addRow(m_note);

    const auto emitChanged = [this] {
        updateEnabled();
        if (!m_quiet)
            emit changed();
    };
    connect(m_depth, qOverload<int>(&QSpinBox::valueChanged), this, emitChanged);
    connect(m_seed, qOverload<int>(&QSpinBox::valueChanged), this, emitChanged);
    for (QComboBox *c : {m_norm, m_activation, m_positions, m_source})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, emitChanged);
    connect(m_load, &QPushButton::clicked, this, &StackControls::loadWeightsRequested);
    connect(m_layer, qOverload<int>(&QSpinBox::valueChanged), this, [this](int l) {
        if (!m_quiet)
            emit layerChanged(l);
    });
    updateEnabled();
}

StackSettings StackControls::settings() const
{
    StackSettings s;
    s.depth = m_depth->value();
    s.norm = NormPlacement(m_norm->currentData().toInt());
    s.activation = Activation(m_activation->currentData().toInt());
    s.positions = PositionEncoding(m_positions->currentData().toInt());
    s.source = StackWeightsSource(m_source->currentData().toInt());
    s.seed = quint64(m_seed->value());
    if (s.source == StackWeightsSource::File) {
        s.loaded = m_loaded;
        s.loadedSource = m_loadedSource;
        s.loadedDepth = m_loadedDepth;
    }
    return s;
}

void StackControls::setSettings(const StackSettings &s)
{
    m_quiet = true;
    if (s.loaded) {
        m_loaded = s.loaded;
        m_loadedSource = s.loadedSource;
        m_loadedDepth = s.loadedDepth;
    }
    m_depth->setValue(s.depth);
    m_norm->setCurrentIndex(m_norm->findData(int(s.norm)));
    m_activation->setCurrentIndex(m_activation->findData(int(s.activation)));
    m_positions->setCurrentIndex(m_positions->findData(int(s.positions)));
    m_source->setCurrentIndex(m_source->findData(int(s.source)));
    m_seed->setValue(int(s.seed));
    m_quiet = false;
    updateEnabled();
}

void StackControls::setLoadedWeights(std::shared_ptr<const StackWeights<float>> weights, int depth,
                                     const QString &source)
{
    const bool hasPositions = weights && weights->positions.size() > 0;
    m_loaded = std::move(weights);
    m_loadedSource = source;
    m_loadedDepth = depth;
    m_quiet = true;
    m_source->setCurrentIndex(m_source->findData(int(StackWeightsSource::File)));
    m_norm->setCurrentIndex(m_norm->findData(int(NormPlacement::Pre)));
    m_activation->setCurrentIndex(m_activation->findData(int(Activation::GeluTanh)));
    if (hasPositions)
        m_positions->setCurrentIndex(m_positions->findData(int(PositionEncoding::Learned)));
    m_depth->setValue(std::max(2, std::min(depth, kMaxDepth)));
    m_quiet = false;
    updateEnabled();
    emit changed();
}

void StackControls::setShownLayer(int layer)
{
    if (m_layer->value() == layer) // per snapshot: setValue redraws the spin box even when equal
        return;
    m_quiet = true;
    m_layer->setValue(layer);
    m_quiet = false;
}

int StackControls::shownLayer() const
{
    return m_layer->value();
}

void StackControls::updateEnabled()
{
    const StackSettings s = settings();
    const bool on = s.enabled();
    const bool quiet = m_quiet; // a shorter stack clamps the shown layer; the session clamps it too
    m_quiet = true;
    m_layer->setMaximum(std::max(0, s.depth - 1));
    m_quiet = quiet;
    m_layer->setEnabled(on);
    for (QWidget *w : std::initializer_list<QWidget *>{m_norm, m_activation, m_positions, m_source})
        w->setEnabled(on);
    m_seed->setEnabled(on && s.source == StackWeightsSource::Seeded);
    if (auto *m = qobject_cast<QStandardItemModel *>(m_source->model()))
        m->item(1)->setEnabled(m_loaded != nullptr);
    m_sourceLabel->setText(m_loaded ? tr("Loaded: %1 (%2 blocks)").arg(m_loadedSource).arg(m_loadedDepth)
                                    : tr("No weights file loaded."));
    if (!on)
        m_note->setText(tr("Depth 1 shows one attention layer on the word vectors, as above. Set 2 or more for "
                           "a stack; the heads, scaling, mask and normalization then apply to every layer."));
    else if (s.source == StackWeightsSource::File && s.depth > m_loadedDepth)
        m_note->setText(tr("The file holds %1 blocks.").arg(m_loadedDepth));
    else
        m_note->setText(tr("The stack replaces the projections below; the heads, scaling, mask and "
                           "normalization apply to every layer."));
}

} // namespace attnviz::ui
