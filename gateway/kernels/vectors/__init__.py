"""Vectors kept in memory for search: the index of one space (`index`), the cache of
every workspace's spaces (`cache`), and the search body files and data documents share
(`search_body`)."""
