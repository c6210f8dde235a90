"""The model room: the one adapter to an OpenAI-compatible endpoint and everything around its requests.

What is asked (:mod:`.prompts`, :mod:`.reply_schemas`, :mod:`.provider_profiles`), of whom and how
(:mod:`.model_settings`, :mod:`.model_sampling`, :mod:`.model_prices`), the request itself
(:mod:`.model_gateway`, as activities in :mod:`.model_activities`), and what is accepted back
(:mod:`.model_validation`, :mod:`.draft_checks`).
"""
