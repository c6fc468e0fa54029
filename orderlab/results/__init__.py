"""Results folders: the staged writer, ownership, manifests, baseline diffs, junit, merge of shards."""
