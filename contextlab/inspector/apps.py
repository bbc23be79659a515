from typing import Any

from django.apps import AppConfig


class InspectorConfig(AppConfig):
    """The session tree, the per-turn context inspector and the context growth chart."""

    name = "contextlab.inspector"
    label = "inspector"

    def ready(self) -> None:
        from contextlab.library.signals import entries_appended

        def store_tree_index(sender: Any, *, session_id: int, **kwargs: Any) -> None:
            # Entries were appended (a job's summary): store the grown session's tree index
            # now, so that its next open, in any process, need not build it. Imported here,
            # not when the app loads: commands that never append need not load the services.
            from contextlab.inspector.services import tree_index_refresh

            tree_index_refresh(session_id=session_id)

        entries_appended.connect(store_tree_index, weak=False, dispatch_uid="inspector-tree-index")
