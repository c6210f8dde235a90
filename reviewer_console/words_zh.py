"""The Chinese of what :mod:`reviewer_console.words` says in English elsewhere: review refusals (by their
code; :func:`contracts.refusals.refusal_sentence` has the English) and the effect card's labels."""

from __future__ import annotations

REFUSALS_ZH: dict[str, str] = {
    "malformed_review": "发送的内容不是审批",
    "case_not_waiting_for_review": "此案件没有在等待审批",
    "already_decided": "此提议已经有了决定，决定不可更改",
    "unknown_reviewer": "{reviewer} 不是已知的审批人",
    "applicant_cannot_review": "申请人不能批准自己的退款",
    "not_a_reviewer": "{reviewer} 不是审批人",
    "reviewer_of_another_tenant": "审批人 {reviewer} 属于另一个租户",
    "digest_mismatch": "签署的是另一个提议（摘要不同）",
    "proposal_expired": "提议在签署前已过期",
    "signature_required": "审批必须带有审批人的签名；名字本身不能证明任何事",
    "approval_reused": "这个批准令牌已经提交过；请重新签署",
    "reviewer_already_approved": "审批人 {reviewer} 已经批准过；租户的政策需要另一位审批人",
    "directory_unavailable": "暂时无法读取支持目录来核对审批；没有任何改变，请再次发送",
    "token_expired": "批准令牌已过期；请重新签署",
    "token_for_another_case": "批准令牌是为另一个案件签署的",
    "passkey_challenge_mismatch": "通行密钥签署的案件、提议、决定或随机数与此审批不符；请重新批准",
    "passkey_wrong_origin": "通行密钥是在另一个页面上使用的，而不是注册它的审批台",
    "passkey_wrong_rp": "此通行密钥批准属于另一个依赖方",
    "passkey_user_not_verified": "验证器没有验证审批人 {reviewer} 的身份（PIN 或生物识别）",
    "passkey_user_not_present": "验证器没有检测到审批人 {reviewer} 在场",
    "bad_signature": "签名与审批人 {reviewer} 发布的密钥不符",
    "wrong_signer": "批准令牌不是用审批人 {reviewer} 的密钥签署的",
    "unknown_signer": "目录中没有审批人 {reviewer} 的密钥",
    "malformed_token": "批准令牌不是签名令牌",
    "wrong_algorithm": "批准令牌没有用 EdDSA（Ed25519）签名",
    "private_key_in_key_set": "案件的密钥集中含有私钥，因此不接受任何签名",
    "malformed_claims": "批准令牌缺少必需的声明",
    "issued_in_future": "批准令牌的日期在未来",
    "case_input_refused": "此运行拒绝了它的启动输入并已结束；不接受审批",
}


LABELS_ZH: dict[str, str] = {
    "refund": "退款",
    "invoice": "发票",
    "item": "商品",
    "rule": "规则",
    "why": "依据",
    "return": "退货",
    "policy": "政策",
    "digest": "摘要",
    "approvals": "审批",
    "decision": "决定",
    "order": "订单",
    "delivered": "送达",
    "warehouse receipt": "仓库签收",
    "paid items": "已付商品",
    "already refunded": "已退款",
    "freight (not refunded)": "运费（不退）",
    "invoice total": "发票总额",
}
