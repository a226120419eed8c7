package dev.aiguard.boot.autoconfigure;

import static dev.aiguard.boot.autoconfigure.PropertyChecks.enumValue;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.make;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.with;

import java.util.Locale;
import java.util.Map;

import dev.aiguard.boot.autoconfigure.properties.BudgetsProperties;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.PriceTable;
import dev.aiguard.budget.PromptCapAction;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.core.Priority;
import dev.aiguard.truncation.TokenCounter;

/** {@code aiguard.budgets} → the {@link BudgetSpec} every policy with {@code budget: true} shares. */
final class BudgetMapper {

	private BudgetMapper() {
	}

	static BudgetSpec budget(BudgetsProperties p) {
		String at = AiGuardProperties.PREFIX + ".budgets";
		BudgetSpec s = BudgetSpec.defaults();
		s = with(at + ".prompt-cap", p.getPromptCap(), s, BudgetSpec::promptCap);
		if (p.getOnPromptOverCap() != null) {
			s = s.onPromptOverCap(enumValue(at + ".on-prompt-over-cap", p.getOnPromptOverCap(), PromptCapAction.class));
		}
		s = with(at + ".output-cap", p.getOutputCap(), s, BudgetSpec::outputCap);
		s = s.prices(prices(at, p));
		for (Map.Entry<String, String> e : p.getEncodings().entrySet()) {
			// jtokkit is optional: without it the property fails naming what is missing
			TokenCounter counter = make(at + ".encodings." + e.getKey(), () -> TokenCounter.jtokkit(e.getValue()));
			s = with(at + ".encodings." + e.getKey(), counter, s, (spec, c) -> spec.counter(e.getKey(), c));
		}
		s = s.tenants(limits(at + ".tenant", p.getTenant()));
		for (Map.Entry<String, BudgetsProperties.Limits> e : p.getTenants().entrySet()) {
			TenantLimits own = limits(at + ".tenants." + e.getKey(), e.getValue());
			s = with(at + ".tenants." + e.getKey(), own, s, (spec, l) -> spec.tenant(e.getKey(), l));
		}
		for (Map.Entry<String, Double> e : p.getReserves().entrySet()) {
			String rat = at + ".reserves." + e.getKey();
			Priority priority = make(rat, e.getKey(), k -> Priority.valueOf(k.toUpperCase(Locale.ROOT)));
			s = with(rat, e.getValue(), s, (spec, f) -> spec.reserve(priority, f));
		}
		s = provider(at + ".provider", p.getProvider(), s);
		s = with(at + ".max-wait", p.getMaxWait(), s, BudgetSpec::maxWait);
		s = with(at + ".default-tenant", p.getDefaultTenant(), s, BudgetSpec::defaultTenant);
		s = with(at + ".default-model", p.getDefaultModel(), s, BudgetSpec::defaultModel);
		s = with(at + ".tenant-idle", p.getTenantIdle(), s, BudgetSpec::tenantIdle);
		s = with(at + ".max-tenants", p.getMaxTenants(), s, BudgetSpec::maxTenants);
		BudgetSpec spec = s;
		make(at, () -> {
			spec.check();
			return spec;
		});
		return spec;
	}

	private static PriceTable prices(String at, BudgetsProperties p) {
		PriceTable prices = make(at + ".currency", p.getCurrency(), PriceTable::in);
		for (Map.Entry<String, BudgetsProperties.Price> e : p.getPrices().entrySet()) {
			String pat = at + ".prices." + e.getKey();
			BudgetsProperties.Price price = e.getValue();
			if (price.getInput() == null || price.getOutput() == null) {
				throw new InvalidGuardPropertyException(pat + (price.getInput() == null ? ".input" : ".output"), null,
						"a price needs both input and output per million tokens", null);
			}
			PriceTable table = prices;
			prices = make(pat, () -> table.model(e.getKey(), price.getInput(), price.getOutput()));
		}
		return prices;
	}

	private static BudgetSpec provider(String at, BudgetsProperties.Provider provider, BudgetSpec s) {
		if (provider.getKey() != null) {
			ProviderLimits limits = ProviderLimits.unlimited();
			limits = with(at + ".requests-per-minute", provider.getRequestsPerMinute(), limits,
					ProviderLimits::requestsPerMinute);
			limits = with(at + ".tokens-per-minute", provider.getTokensPerMinute(), limits,
					ProviderLimits::tokensPerMinute);
			ProviderLimits l = limits;
			return with(at + ".key", provider.getKey(), s, (spec, key) -> spec.provider(key, l));
		}
		if (provider.getRequestsPerMinute() != null || provider.getTokensPerMinute() != null) {
			throw new InvalidGuardPropertyException(at + ".key", null, "provider limits need the key they limit", null);
		}
		return s;
	}

	private static TenantLimits limits(String at, BudgetsProperties.Limits l) {
		TenantLimits limits = TenantLimits.unlimited();
		limits = with(at + ".requests-per-minute", l.getRequestsPerMinute(), limits, TenantLimits::requestsPerMinute);
		limits = with(at + ".tokens-per-minute", l.getTokensPerMinute(), limits, TenantLimits::tokensPerMinute);
		return with(at + ".cost-per-day", l.getCostPerDay(), limits, TenantLimits::costPerDay);
	}
}
