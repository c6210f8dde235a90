"""The case room: what a case reads and writes about itself, outside commerce and the model.

The applicant's credential (:mod:`.credential_activities`), where a resumed run came from
(:mod:`.run_origin`), the case record on disk (:mod:`.case_records`) and the consented reply-language
preferences (:mod:`.preferences`).
"""
