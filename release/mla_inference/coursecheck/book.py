# Generated from the course's judge by the release build: do not edit.
"""The rules of each rule test cell of this notebook, and its own cells."""

from .history import Book
from .rulebook import Rule

BOOK = Book(
    assignment='mla_inference',
    course_cells=frozenset(('0177b0d69f6ea768', '94a5fb6f41955259', '97e62fa4bc261e72', 'c1408d317a994091')),
    test_cells=frozenset(('2df2f3c67bf2d9bc', '3a30b9b8649d30bb', '3a7fb41d70b02bf1', '4740477fc2e52fbb', '8aa29a542635a27f', 'a0f7f612e85ad552', 'c93e5d1eb69281d7', 'ca26ef2818d387a4', 'cc58d73ec33f5d1e', 'd9497f13506a9fd6', 'f21eb6586dc3a36a')),
    answer_cells=(frozenset(('rope',)), frozenset(('merged_score_matrix',)), frozenset(('MLAAttention',)), frozenset(('latent_query',)), frozenset(('decode_step',)), frozenset(('cache_elements',)), frozenset(('fits_lab',)), ),
    rules={
        'p1_rope_rules': (Rule(kind='no loops', name='rope', part='Part 1(a)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'p2_mla_forward': (Rule(kind='no fused attention', name='MLAAttention', part='Part 2', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''),),
        'p2_mla_rules': (Rule(kind='no fused attention', name='MLAAttention', part='Part 2', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='MLAAttention', part='Part 2', skip=(), skip_reached_from=('rope',), outputs=(), size_params=None, word='', expected='', why='')),
        'p3_decode_rules': (Rule(kind='uses', name='decode_step', part='Part 3(b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='latent_query', expected='get its queries from latent_query(model, x_t, t)', why=''), Rule(kind='no fused attention', name='decode_step', part='Part 3(b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='decode_step', part='Part 3(b)', skip=('MLAAttention',), skip_reached_from=('rope',), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no fused attention', name='latent_query', part='Part 3(b)', skip=(), skip_reached_from=(), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='no loops', name='latent_query', part='Part 3(b)', skip=('MLAAttention',), skip_reached_from=('rope',), outputs=(), size_params=None, word='', expected='', why=''), Rule(kind='never names', name='decode_step', part='Part 3(b)', skip=('MLAAttention',), skip_reached_from=('rope', 'latent_query'), outputs=(), size_params=None, word='W_UK', expected='W_UK only inside latent_query, absorbed into the query', why='rebuilding keys from the cached latents: with W_UK absorbed into the query the keys are never formed')),
    },
    parts={'p1_merged_score_matrix': 'Part 1(b)', 'p1_rope': 'Part 1(a)', 'p1_rope_rules': 'Part 1(a)', 'p2_mla_attributes': 'Part 2', 'p2_mla_forward': 'Part 2', 'p2_mla_rules': 'Part 2', 'p3_decode_cache': 'Part 3(b)', 'p3_decode_forward': 'Part 3(b)', 'p3_decode_rules': 'Part 3(b)', 'p3_latent_query': 'Part 3(a)', 'p4_cache_elements': 'Part 4(a)'},
    answers={'p1_merged_score_matrix': 1, 'p1_rope': 0, 'p1_rope_rules': 0, 'p2_mla_attributes': 2, 'p2_mla_forward': 2, 'p2_mla_rules': 2, 'p3_decode_cache': 4, 'p3_decode_forward': 4, 'p3_decode_rules': 4, 'p3_latent_query': 3, 'p4_cache_elements': 5},
)
