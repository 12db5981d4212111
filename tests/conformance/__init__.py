"""The conformance suite: the same cases on every backend that loads here, compared with numpy's."""
