// The one pass, at start, that gives the node label (decide/node_labels.hpp) to the PVs of
// this instance's node (and the shared and every-node ones) made before PVs carried it, so
// that they move from the selection of unlabelled PVs, which every instance watches, to their
// node's. Idempotent: a labelled PV is never listed here, and two instances labelling one
// shared PV write the same value. Run before the watches start, so that this instance never
// sees its own node's PVs move between its two selections.
#pragma once
#include "base/config.hpp"
#include "kube/k8s.hpp"

// Lists the PVs with no node label and labels those LabelsVolume picks. Best effort: a
// failure is logged and the rest are tried; the ones left stay in the unlabelled selection
// (which works, at the old cost) until the next start. Returns how many were labelled.
int LabelOldVolumes(const Config& cfg, KubeApi& api);
