// What of claims, volumes and nodes the caches keep: only what the decisions read (as
// client-go's informer transforms do): with thousands of claims and volumes this is most of
// the provisioner's memory. A bound claim is never acted on; a volume that is not ours is never
// acted on. Each function changes its object in place; pure otherwise, safe from any thread.
#pragma once
#include "base/objects.hpp"

// Keeps a claim's fields the decisions read, and its request and capacity in bytes
// (request_bytes, capacity_bytes; -1 when not a quantity). A bound claim keeps its request,
// capacity, class and annotations only while it asks for more than it has (an expansion); a
// claim that waits for a volume keeps its labels (a class's pathPattern may read them).
void SlimForCache(Claim* c);

// What the claim dispatcher (control/nodes/dispatcher.hpp) keeps of every claim: its name,
// uid, class, the annotations that name its provisioner and node, the node label, and whether
// it waits for a volume or asks for more (its volume's name, phase, request_bytes and
// capacity_bytes).
void SlimForDispatch(Claim* c);

// Keeps a node's name, uid and resourceVersion: only whether it exists matters.
void SlimForCache(Node* n);

// Keeps a volume's fields the decisions read; its capacity in bytes (capacity_bytes) instead of
// the text. A volume on every node keeps its class; a volume not ours, or bound and not being
// deleted, drops its finalizers and hostPath type; one not ours also its claim's name.
void SlimForCache(Volume* v);
