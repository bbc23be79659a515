"""How entries are stored: values made storable, a session's figures, the tree bookkeeping (depth,
branches, problems) and the batched COPY writer. The importer and the append service both write
through these."""
